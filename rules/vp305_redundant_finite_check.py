"""VP305 redundant-finite-check: an explicit isfinite() guard around `scaler.step`."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid, Rule
from verifier.static.scaler import is_finite_guard, scaler_method
from verifier.static.walk import iter_descendants


class RedundantFiniteCheck(Rule):
    code = "VP305"
    name = "redundant-finite-check"
    category = Category.AMP
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "an extra host read of a finiteness flag the GradScaler already checks"
    summary = "Finds `if torch.isfinite(...)` (or isnan/isinf) deciding whether `scaler.step(optimizer)` runs."
    why = (
        "`GradScaler.step` already skips the optimizer step when the unscaled gradients hold "
        "inf/NaN, and `update()` then lowers the scale. The explicit check adds one host sync per "
        "step for no safety gain; if it also skips `update()`, the scale never backs off."
    )
    example = """\
scaler.unscale_(optimizer)
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
if torch.isfinite(norm):
    scaler.step(optimizer)
scaler.update()
"""
    use_instead = """\
scaler.unscale_(optimizer)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)  # skips the step itself on inf/NaN gradients
scaler.update()
"""
    fix = "Drop the check and call `scaler.step(optimizer)` unconditionally; it skips inf/NaN steps itself."
    # The guard must sit around a GradScaler, known by its constructor or a name like `scaler`.
    tokens = ("scaler", "Scaler", "SCALER")
    references = ("https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.step",)

    def visit_If(self, node: cst.If) -> None:
        if not is_finite_guard(node, self.context):
            return
        skips_update = any(
            type(child) is cst.Call and scaler_method(child, self.context.facts) == "update"
            for child in iter_descendants(node.body)
        )
        message = "explicit finiteness check around `scaler.step`: GradScaler already skips inf/NaN steps; this adds a host sync every step"
        if skips_update:
            message += " and skips `update()` with the step, so the scale never backs off"
        self.report(node.test, message)

    VALID = (
        """\
import torch
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    scaler.step(optimizer)
    scaler.update()
""",
        """\
import torch
for x, y in loader:
    loss = criterion(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
if not torch.isfinite(loss):
    raise RuntimeError("diverged")
""",
        # A learning-rate search that stops when the loss diverges, after the step ran.
        """\
import torch
def find_lr(model, loader, optimizer, scaler, num_it):
    losses = []
    for index, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if not torch.isfinite(loss):
            if index == 0:
                raise ValueError("loss is NaN or inf")
            break
        losses.append(loss.item())
    return losses
""",
        # An abort on divergence before the step: the scaler would skip steps forever instead.
        """\
import torch
for x, y in loader:
    loss = criterion(model(x), y)
    if not loss.isfinite().all():
        raise RuntimeError("model diverged")
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if torch.isfinite(norm):
        scaler.step(optimizer)
    scaler.update()
""",
            line=6,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if not torch.isfinite(norm):
        optimizer.zero_grad()
        continue
    scaler.step(optimizer)
    scaler.update()
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
def train_step(model, batch, optimizer, scaler):
    loss = model(batch)
    scaler.scale(loss).backward()
    if not torch.isfinite(loss):
        return None
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()
for batch in loader:
    train_step(model, batch, optimizer, scaler)
""",
            line=5,
            severity=Severity.LOW,
        ),
    )
