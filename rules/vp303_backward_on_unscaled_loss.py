"""VP303 backward-on-unscaled-loss: `loss.backward()` where a GradScaler steps the optimizer."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Proof
from verifier.static.scaler import AmpScope, AmpScopeRule, scaler_proof


class BackwardOnUnscaledLoss(AmpScopeRule):
    code = "VP303"
    name = "backward-on-unscaled-loss"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.HIGH)
    cost = "the gradients of an unscaled FP16 loss underflow while the scaler steps as if they were scaled"
    summary = "Finds `loss.backward()` on a loss that was not passed through `scaler.scale()`, in a scope where `scaler.step()` steps the optimizer."
    why = (
        "`scaler.step` divides the gradients by the scale. If the loss was not scaled, the update "
        "is shrunk by the scale factor (training silently stalls), and FP16 gradients that "
        "underflow are lost: the reason to use a GradScaler at all."
    )
    example = """\
loss.backward()
scaler.step(optimizer)
scaler.update()
"""
    use_instead = """\
scaler.scale(loss).backward()
scaler.step(optimizer)
scaler.update()
"""
    fix = "Backpropagate the scaled loss: `scaler.scale(loss).backward()`."
    references = ("https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.scale",)

    premises = (Premise.VALUE, Premise.RULE)

    def check(self, scope: AmpScope) -> None:
        if not scope.steps_with_scaler:
            return
        scaled_backwards = [call for call, _, scaled in scope.backwards if scaled]
        for call, where, scaled in scope.backwards:
            if not scaled and id(call) not in scope.exempt:
                self.report(
                    call,
                    f"`{self.context.code_for(call)}` backpropagates an unscaled loss but "
                    "`scaler.step` unscales the gradients: updates shrink by the scale factor",
                    where=where,
                    evidence=(scaler_proof(scope), self._unscaled_feeds_the_step(scope, scaled_backwards)),
                )

    def _unscaled_feeds_the_step(self, scope: AmpScope, scaled_backwards: list[cst.Call]) -> Proof:
        """The rule's premise: the gradients of this unscaled loss are what `scaler.step` unscales."""
        step = scope.calls_of("step")[0]
        if scaled_backwards:
            return Proof.assumed(
                Premise.RULE,
                f"another loss here is scaled (`{self.context.code_for(scaled_backwards[0])}`): this one may "
                "train parameters the scaler does not step",
                scaled_backwards[0],
            )
        return Proof.proven(
            Premise.RULE,
            f"`{self.context.code_for(step.call)}` steps the optimizer here and no loss in this function is scaled",
            step.call,
        )

    VALID = (
        """\
for x, y in loader:
    scaled = scaler.scale(criterion(model(x), y))
    scaled.backward()
    scaler.step(optimizer)
    scaler.update()
""",
        """\
for x, y in loader:
    scaler.scale(criterion(model(x), y) / accumulation).backward()
    scaler.step(optimizer)
    scaler.update()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    scaler.step(optimizer)
    scaler.update()
""",
            line=5,
            severity=Severity.HIGH,
        ),
    )
