"""VP302 clip-before-unscale: clipping gradients that are still multiplied by the loss scale."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid
from verifier.static.scaler import AmpScope, AmpScopeRule


class ClipBeforeUnscale(AmpScopeRule):
    code = "VP302"
    name = "clip-before-unscale"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.HIGH)
    summary = "Finds `clip_grad_norm_`/`clip_grad_value_` called before `scaler.unscale_(optimizer)` where a GradScaler is used."
    why = (
        "Until `unscale_` runs, gradients are multiplied by the loss scale (65536 at start). A "
        "max-norm of 1.0 then clips against a norm thousands of times too large, so clipping either "
        "does nothing useful or crushes every update, and the clip threshold silently depends on "
        "the current scale."
    )
    example = """\
scaler.scale(loss).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
"""
    use_instead = """\
scaler.scale(loss).backward()
scaler.unscale_(optimizer)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
"""
    fix = "Call `scaler.unscale_(optimizer)` before clipping; `scaler.step` then does not unscale twice."
    references = ("https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping",)

    def check(self, scope: AmpScope) -> None:
        if not (scope.scales_loss or scope.steps_with_scaler):
            return
        for call, where, unscaled_before in scope.clips:
            if not unscaled_before and id(call) not in scope.exempt:
                self.report(
                    call,
                    "gradients are clipped while still multiplied by the loss scale; "
                    "call `scaler.unscale_(optimizer)` first",
                    where=where,
                )

    VALID = (
        """\
import torch
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
        """\
import torch
for x, y in loader:
    criterion(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
""",
    )
    INVALID = (
        Invalid(
            """\
from torch.nn.utils import clip_grad_norm_
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
""",
            line=4,
            severity=Severity.HIGH,
        ),
    )
