"""VP306 training-without-autocast: a training loop in a module that never uses mixed precision.

A training loop is the innermost loop whose own body runs `backward()`, directly or through the
functions it calls (`heat.py`'s `fp32_backward` facts: a plain name, `self.method`, a method of an
instance, `Trainer().step(...)`, in this module or another), in a module that imports torch
(turtle graphics has a `backward()` too). A module "uses mixed precision" when its text mentions
autocast, a GradScaler, a 16-bit dtype, `.half()` or `mixed_precision` (`amp.PRECISION_CHOSEN`):
such a module has chosen its precision and is left alone, as a backward in one is. Also left alone:
`accelerator.backward(loss)` / `fabric.backward(loss)` loops, whose framework is configured
elsewhere, and loops over a literal list of configurations (`for mode in [A, B]:`).
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.deferred import JudgementInput, deferred
from verifier.static.heat import Where
from verifier.static.rule import Invalid, Rule


class TrainingWithoutAutocast(Rule):
    code = "VP306"
    name = "training-without-autocast"
    category = Category.AMP
    severity = SeverityByHeat(step=Severity.INFO, epoch=Severity.INFO, once=None)
    cost = "a training step run in FP32 where autocast could use lower-precision tensor cores"
    # The backward may be in another module: any module of torch code may hold the loop.
    tokens = ("torch",)
    summary = "Notes training loops (loops that call `backward()`) in modules that never use autocast."
    why = (
        "Without autocast every matmul and convolution runs in FP32. On GPUs with tensor cores, "
        "running them in BF16 (or FP16 with a GradScaler) usually cuts step time and activation "
        "memory substantially for large enough models, at no cost in accuracy for most workloads. "
        "Small, launch-bound models gain little: measure with `verify-perf --dynamic` before and after."
    )
    example = """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""
    use_instead = """\
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""
    fix = 'Wrap the forward pass and loss in `torch.autocast("cuda", dtype=torch.bfloat16)` (FP16 also needs `torch.amp.GradScaler("cuda")`).'
    references = (
        "https://pytorch.org/docs/stable/amp.html",
        "https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._active = not context.heat.precision_chosen
        self._loops: list[tuple[cst.CSTNode, Where]] = []

    def visit_For(self, node: cst.For) -> None:
        # `for mode in [A, B]:` repeats a check per configuration; it trains on no data.
        if type(node.iter) not in (cst.List, cst.Tuple, cst.Set):
            self._enter_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._enter_loop(node)

    def _enter_loop(self, node: cst.For | cst.While) -> None:
        if self._active:
            self._loops.append((node, self.context.heat.loop_where(node)))

    def leave_Module(self, node: cst.Module) -> None:
        # No autocast advice for a CPU-only module (it never names a device).
        if not self.context.imports.imports_module("torch") or not self.context.may_use_accelerator:
            return
        for loop_node, where in self._loops:
            loop = where.innermost_loop
            # Its own body's backward, or one a function it calls runs (in this module or another
            # that chose no precision either), known once the project's calls are resolved.
            severity = self.severity if loop.fp32_backward else deferred(
                lambda loop=loop: self.severity if loop.fp32_backward_call else None,
                outcomes=(self.severity,), reads=(JudgementInput.LOOPS,),
            )
            self.report(
                loop_node,
                "training loop without autocast: every op runs in FP32; mixed precision "
                "(BF16 autocast, or FP16 with a GradScaler) usually trains faster on tensor-core GPUs",
                where=where, severity=severity,
            )

    VALID = (
        """\
import torch
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
        """\
import torch
device = "cuda"
model.eval()
with torch.no_grad():
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (model(x).argmax(-1) == y).sum()
""",
        """\
for batch in loader:
    loss = model(**batch).loss
    accelerator.backward(loss)
    optimizer.step()
""",
        """\
import torch
device = "cuda"
for mode in ["local", "remote"]:
    loss = run(model.to(device), mode).sum()
    loss.backward()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = "cuda"
for epoch in range(10):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""",
            line=4,
            severity=Severity.INFO,
        ),
        Invalid(
            """\
import torch
class Trainer:
    def train_step(self, batch):
        loss = self.model(batch.to(self.device)).mean()
        loss.backward()
        self.optimizer.step()

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
""",
            line=9,
            severity=Severity.INFO,
        ),
    )
