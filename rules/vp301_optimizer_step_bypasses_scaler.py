"""VP301 optimizer-step-bypasses-scaler: `optimizer.step()` where a GradScaler scales the loss."""

from __future__ import annotations

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.rule import Invalid
from verifier.static.scaler import AmpScope, AmpScopeRule


class OptimizerStepBypassesScaler(AmpScopeRule):
    code = "VP301"
    name = "optimizer-step-bypasses-scaler"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.CRITICAL)
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
