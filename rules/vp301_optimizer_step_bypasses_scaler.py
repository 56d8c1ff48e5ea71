"""VP301 optimizer-step-bypasses-scaler: `optimizer.step()` where a GradScaler scales the loss."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Proof
from verifier.static.scaler import AmpScope, AmpScopeRule, scaler_proof


class OptimizerStepBypassesScaler(AmpScopeRule):
    code = "VP301"
    name = "optimizer-step-bypasses-scaler"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.CRITICAL)
    cost = "the optimizer steps on scaled gradients the GradScaler never unscaled or checked for inf/NaN"
    summary = "Finds `optimizer.step()` called directly in a scope where a `GradScaler` scales the loss."
    why = (
        "With a GradScaler the gradients are multiplied by the scale factor. `scaler.step(optimizer)` "
        "unscales them and skips the step when they hold inf/NaN. Calling `optimizer.step()` "
        "directly applies still-scaled gradients (updates thousands of times too large) and steps "
        "on inf/NaN gradients after an overflow, which corrupts the weights."
    )
    example = """\
scaler.scale(loss).backward()
optimizer.step()
"""
    use_instead = """\
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
"""
    fix = "Step through the scaler: `scaler.step(optimizer)` then `scaler.update()`."
    references = (
        "https://pytorch.org/docs/stable/amp.html#gradient-scaling",
        "https://pytorch.org/docs/stable/notes/amp_examples.html",
    )

    premises = (Premise.VALUE, Premise.RULE)

    def check(self, scope: AmpScope) -> None:
        if not scope.scales_loss:
            return
        for call, where in scope.optimizer_steps:
            if id(call) not in scope.exempt:
                self.report(
                    call,
                    f"`{self.context.code_for(call)}` bypasses the GradScaler that scales this loss: "
                    "gradients are still scaled and inf/NaN steps are not skipped",
                    where=where,
                    evidence=(scaler_proof(scope), self._scaled_gradients(scope, call)),
                )

    def _scaled_gradients(self, scope: AmpScope, call: cst.Call) -> Proof:
        """The rule's premise: the optimizer stepped directly holds gradients of a scaled loss.
        Shown when every loss this function backpropagates is scaled; a loss that is not leaves
        open that this optimizer trains on that one."""
        scale = scope.calls_of("scale")[0]
        unscaled = next((backward for backward, _, scaled in scope.backwards if not scaled), None)
        if unscaled is None:
            return Proof.proven(
                Premise.RULE,
                f"every loss backpropagated here is scaled (`{self.context.code_for(scale.call)}`): "
                f"`{self.context.code_for(call)}` steps on scaled gradients",
                scale.call,
            )
        return Proof.assumed(
            Premise.RULE,
            f"`{self.context.code_for(unscaled)}` here is not scaled: this optimizer may train on that loss",
            unscaled,
        )

    VALID = (
        """\
import torch
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
""",
        """\
for x, y in loader:
    loss = criterion(model(x), y)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
""",
        """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    optimizer.step()
    scaler.update()
""",
            line=6,
            severity=Severity.CRITICAL,
        ),
        Invalid(
            """\
class Trainer:
    def training_step(self, batch):
        loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()

    def optimizer_step(self):
        self.optimizer.step()
        self.scaler.update()
""",
            line=7,
            severity=Severity.CRITICAL,
        ),
    )
