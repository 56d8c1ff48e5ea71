"""VP303 backward-on-unscaled-loss: `loss.backward()` where a GradScaler steps the optimizer."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid
from verifier.static.scaler import AmpScope, AmpScopeRule


class BackwardOnUnscaledLoss(AmpScopeRule):
    code = "VP303"
    name = "backward-on-unscaled-loss"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.HIGH)
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

    def check(self, scope: AmpScope) -> None:
        if not scope.steps_with_scaler:
            return
        for call, where, scaled in scope.backwards:
            if not scaled and id(call) not in scope.exempt:
                self.report(
                    call,
                    f"`{self.context.code_for(call)}` backpropagates an unscaled loss but "
                    "`scaler.step` unscales the gradients: updates shrink by the scale factor",
                    where=where,
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
