"""VP307 autocast-wraps-backward: `backward()` inside an autocast region, or a redundant nested region.

A `with torch.autocast(...)` (any spelling: `torch.amp.autocast`, the deprecated
`torch.cuda.amp.autocast`, also `autocast(...) if use_amp else nullcontext()`) is a region until
the `with` ends; functions defined inside it are not. Reported: a `backward()` call in an enabled
region, and an enabled region nested in another one that casts on the same device to the same
dtype. Nesting that changes something is the documented way to opt out locally
(`autocast(enabled=False)`, another dtype) and is not reported; nor is a nested region whose
`enabled` is decided at run time.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.amp import AutocastRegion, autocast_region, is_backward
from verifier.static.rule import Invalid, Rule


class AutocastWrapsBackward(Rule):
    code = "VP307"
    name = "autocast-wraps-backward"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "backward under autocast, or nested autocast: no benefit and surprising casts"
    tokens = ("autocast",)
    summary = "Finds `backward()` called inside a `with autocast(...)` region, and autocast regions nested in an identical one."
    why = (
        "Autocast should wrap the forward pass and the loss only; the PyTorch AMP docs do not "
        "recommend running backward under autocast. Backward ops already run in the dtype autocast "
        "chose for their forward ops, so the region adds nothing there, while anything else the "
        "region covers (gradient hooks, a double backward, code added later) is cast unexpectedly. "
        "A region nested in one with the same device and dtype changes nothing and only adds "
        "enter/exit work and doubt about which region is in charge."
    )
    example = """\
with torch.autocast("cuda", dtype=torch.float16):
    loss = criterion(model(x), y)
    scaler.scale(loss).backward()
"""
    use_instead = """\
with torch.autocast("cuda", dtype=torch.float16):
    loss = criterion(model(x), y)
scaler.scale(loss).backward()
"""
    fix = "End the autocast region after the loss is computed and call `backward()` outside it; drop redundant nested regions."
    references = (
        "https://pytorch.org/docs/stable/amp.html#torch.autocast",
        "https://pytorch.org/docs/stable/notes/amp_examples.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per function: the regions opened by each enclosing `with` (a function body starts afresh).
        self._regions: list[list[list[AutocastRegion]]] = [[]]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._regions.append([])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._regions.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._regions.append([])

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._regions.pop()

    def visit_With(self, node: cst.With) -> None:
        opened: list[AutocastRegion] = []
        for item in node.items:
            region = autocast_region(item.item, self.context.imports)
            if region is None:
                continue
            outer = opened[-1] if opened else self._innermost()
            if region.enabled is True and outer is not None and outer.enabled is not False and region.same_casting_as(outer):
                self.report(
                    region.call,
                    f"`{self.context.code_for(region.call.func)}` is nested in an autocast region that already "
                    "casts on the same device to the same dtype: it changes nothing",
                    fix="Remove the nested region; nest autocast only to change it (`enabled=False`, another dtype).",
                )
            opened.append(region)
        self._regions[-1].append(opened)

    def leave_With(self, node: cst.With) -> None:
        self._regions[-1].pop()

    def visit_Call(self, node: cst.Call) -> None:
        if not is_backward(node, self.context.imports):
            return
        region = self._innermost()
        if region is not None and region.enabled is not False:
            self.report(
                node,
                f"`{self.context.code_for(node)}` runs inside the autocast region opened by "
                f"`{self.context.code_for(region.call.func)}(...)`: end the region before backward",
            )

    def _innermost(self) -> AutocastRegion | None:
        for opened in reversed(self._regions[-1]):
            if opened:
                return opened[-1]
        return None

    VALID = (
        """\
import torch
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    loss.backward()
""",
        """\
import torch
with torch.autocast("cuda"):
    hidden = model.encoder(x)
    with torch.autocast("cuda", enabled=False):
        scores = head(hidden.float())
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = decoder(hidden)

    def closure():
        loss = criterion(model(x), y)
        loss.backward()
        return loss
""",
        """\
import torch
with torch.autocast("cuda", enabled=False):
    loss = criterion(model(x.float()), y)
    loss.backward()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x), y)
        scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
from torch.amp import autocast
def forward_loss(model, x, y):
    with autocast("cuda", dtype=torch.float16):
        logits = model(x)
        with autocast("cuda", dtype=torch.float16):
            return criterion(logits, y)
""",
            line=6,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import contextlib
import torch
ctx = contextlib.nullcontext
for x, y in loader:
    with torch.autocast("cuda") if use_amp else ctx():
        loss = criterion(model(x), y)
        loss.backward()
""",
            line=7,
            severity=Severity.LOW,
        ),
    )
