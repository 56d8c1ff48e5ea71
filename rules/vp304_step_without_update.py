"""VP304 scaler-step-without-update: `scaler.step` and `scaler.update` must pair in each step."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Proof
from verifier.static.scaler import AmpScope, AmpScopeRule, ScalerCall, scaler_proof


class StepWithoutUpdate(AmpScopeRule):
    code = "VP304"
    name = "scaler-step-without-update"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.HIGH)
    cost = "a loss scale that never adapts, or an `update()` that raises"
    summary = (
        "Finds `scaler.step()` with no `scaler.update()` in the same step (same loop), and "
        "`scaler.update()` with no `step()` or `unscale_()` before it."
    )
    why = (
        "`update()` adjusts the scale after each step: without it the scale never backs off after "
        "an overflow (every later step is skipped) or never grows. A second `step()` before "
        "`update()` raises, and `update()` with no recorded inf checks raises "
        "\"No inf checks were recorded prior to update.\""
    )
    example = """\
for x, y in loader:
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.step(optimizer)
scaler.update()
"""
    use_instead = """\
for x, y in loader:
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.step(optimizer)
    scaler.update()
"""
    fix = "Call `scaler.update()` once per optimizer step, right after `scaler.step(optimizer)`."
    references = ("https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.update",)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes_seen: list[AmpScope] = []

    premises = (Premise.VALUE, Premise.RULE)

    def check(self, scope: AmpScope) -> None:
        # Decided at the end of the module: a helper that only steps may be paired elsewhere.
        self._scopes_seen.append(scope)
        if type(scope.node) is cst.Module:
            self._decide()

    def _decide(self) -> None:
        updated_anywhere = {c.scaler for s in self._scopes_seen for c in s.calls_of("update")}
        prepared_by: dict[str, set[str]] = {}
        for other in self._scopes_seen:
            if other.name is not None:
                prepared_by.setdefault(other.name, set()).update(
                    c.scaler for c in other.scaler_calls if c.method in ("step", "unscale_")
                )
        for scope in self._scopes_seen:
            updates = scope.calls_of("update")
            for step in scope.calls_of("step"):
                same_loop = [u for u in updates if u.scaler == step.scaler and _same_loop(u, step)]
                if same_loop:
                    continue
                if not any(u.scaler == step.scaler for u in updates) and step.scaler in updated_anywhere:
                    continue
                if type(scope.node) is not cst.Module and step.where.innermost_loop is None:
                    # A function that steps once per call, outside any loop of its own: its step is
                    # the caller's, and a caller in another module may well update after it. That
                    # is not shown either way, so nothing is said.
                    continue
                self._report(step, f"`{step.scaler}.step()` has no `{step.scaler}.update()` in the same step")
            prepared_here = {c.scaler for c in scope.scaler_calls if c.method in ("step", "unscale_")}
            for update in updates:
                # Stepped here, by a helper this scope calls, or by one it hands the scaler to.
                helper_steps = any(update.scaler in prepared_by.get(name, ()) for name in scope.called_names)
                if not (update.scaler in prepared_here or helper_steps or update.scaler in scope.passed):
                    self._report(update, f"`{update.scaler}.update()` without `step()` or `unscale_()` before it raises at run time")

    def _report(self, call: ScalerCall, message: str) -> None:
        scope = next(scope for scope in self._scopes_seen if call in scope.scaler_calls)
        rule = Proof.proven(
            Premise.RULE, f"no function of this module pairs `{call.scaler}.{call.method}()` as the scaler needs"
        )
        self.report(call.call, message, where=call.where, evidence=(scaler_proof(scope), rule))

    VALID = (
        # A helper whose step is its caller's: a caller in another module may update the scaler.
        """\
def optimizer_step(scaler, optimizer):
    scaler.step(optimizer)
""",
        """\
for i, (x, y) in enumerate(loader):
    scaler.scale(criterion(model(x), y) / 4).backward()
    if (i + 1) % 4 == 0:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
        """\
def optimizer_step(scaler, optimizer):
    scaler.step(optimizer)

for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    optimizer_step(scaler, optimizer)
    scaler.update()
""",
        # One update of several optimizers: each steps, then the scale is updated once.
        """\
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    for optimizer in (encoder_optimizer, decoder_optimizer):
        scaler.step(optimizer)
    scaler.update()
""",
    )
    INVALID = (
        Invalid(
            """\
for epoch in range(10):
    for x, y in loader:
        scaler.scale(criterion(model(x), y)).backward()
        scaler.step(optimizer)
    scaler.update()
""",
            line=4,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
import torch
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
    scaler.update()
""",
            line=6,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
    scaler.update()
""",
            line=4,
            severity=Severity.MEDIUM,
        ),
    )


def _same_loop(a: ScalerCall, b: ScalerCall) -> bool:
    return _step_loop(a) is _step_loop(b)


def _step_loop(call: ScalerCall):
    """The loop whose iterations are steps: past loops over the optimizers of one update
    (`for opt in optimizers: scaler.step(opt)` then one `scaler.update()` after it)."""
    loop = call.where.innermost_loop
    while loop is not None and loop.over_optimizers:
        loop = loop.parent
    return loop
