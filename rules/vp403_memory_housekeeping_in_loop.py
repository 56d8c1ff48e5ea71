"""VP403 memory-housekeeping-in-loop: `empty_cache()` or `reset_peak_memory_stats()` every iteration.

`torch.cuda.empty_cache()` (and its mps/xpu/accelerator twins) is reported wherever the heat
model says the line runs per step or per epoch. `reset_peak_memory_stats()` is reported only
when nothing in the same loop reads the peak back: a loop that resets and then reads
`max_memory_allocated()` measures each iteration on purpose. Neither is reported in a loop that
is per-step only because it is a benchmark function's innermost loop: autotuners release
memory between measured candidates on purpose. An `empty_cache()` on the statement right after
a release (`del pipeline`, `pipeline = None`, `gc.collect()`) hands back the memory of what was
just dropped (a validation pipeline, a finished evaluation model): once per epoch that is the
intended use, and it is reported only where it runs every step. A release also covers the first
statement of each branch of the `if`/`with`/`try` right after it (`gc.collect()` then
`if cuda: torch.cuda.empty_cache()`). A class whose methods reset the peak and read it back (a
memory tracer resetting in `__enter__` and reading in `__exit__`) measures on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.deferred import DeferredSeverity, deferred
from verifier.static.guards import GuardedRule
from verifier.static.heat import Where
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.rule import Invalid

_EMPTY_CACHE = frozenset(
    {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache", "torch.mps.empty_cache",
     "torch.xpu.empty_cache", "torch.xpu.memory.empty_cache", "torch.accelerator.empty_cache",
     "torch.accelerator.memory.empty_cache"}
)
_RESET_PEAK = frozenset(
    {"torch.cuda.reset_peak_memory_stats", "torch.cuda.memory.reset_peak_memory_stats",
     "torch.cuda.reset_max_memory_allocated", "torch.cuda.memory.reset_max_memory_allocated",
     "torch.cuda.reset_max_memory_cached", "torch.cuda.memory.reset_max_memory_cached",
     "torch.xpu.reset_peak_memory_stats", "torch.xpu.memory.reset_peak_memory_stats",
     "torch.accelerator.reset_peak_memory_stats", "torch.accelerator.memory.reset_peak_memory_stats"}
)
_PEAK_READS = frozenset(
    {"max_memory_allocated", "max_memory_reserved", "max_memory_cached", "memory_stats", "memory_summary"}
)


@dataclass(eq=False)
class _Body:
    """A loop or function body: the resets met in it, and whether it reads a peak."""

    resets: list[tuple[cst.Call, Where]] = field(default_factory=list)
    reads_peak: bool = False


class MemoryHousekeepingInLoop(LambdaScopes, GuardedRule):
    code = "VP403"
    name = "memory-housekeeping-in-loop"
    category = Category.MEMORY
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=None)
    cost = "allocator housekeeping that frees (or resets) what the next step needs again"
    tokens = ("empty_cache", "reset_peak_memory_stats", "reset_max_memory")
    summary = (
        "Finds `torch.cuda.empty_cache()` in a training or evaluation loop, and "
        "`torch.cuda.reset_peak_memory_stats()` in a loop that never reads the peak back."
    )
    why = (
        "`empty_cache()` hands the caching allocator's free blocks back to the driver. The next "
        "step needs the same memory and gets it through `cudaMalloc` again, which is slow, and "
        "freeing device memory synchronizes the device. It does not lower the memory a step "
        "needs, so it cannot prevent an out-of-memory error that the next step would hit anyway. "
        "`reset_peak_memory_stats()` in a loop discards the peak of every earlier iteration: a "
        "peak read after the loop reports the last iteration only."
    )
    example = """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.empty_cache()
"""
    use_instead = """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
# Keep the cache; if memory is fragmented, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
"""
    fix = (
        "Remove the per-iteration `empty_cache()`; if memory is fragmented set "
        "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`. Reset peak statistics once, before "
        "the loop, or read them in the same iteration."
    )
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#memory-management",
        "https://pytorch.org/docs/stable/generated/torch.cuda.empty_cache.html",
        "https://pytorch.org/docs/stable/generated/torch.cuda.reset_peak_memory_stats.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._bodies: list[_Body] = [_Body()]
        # How many bodies each function frame holds, so a function's reads stay its own.
        self._function_starts: list[int] = [0]
        # Whether the statement just left released memory, and whether the one being walked
        # comes right after such a statement in the same block. `_carried` holds, per compound
        # statement being walked, whether its blocks start right after a release: the branches
        # of an `if`/`with`/`try` that follows one do; a loop's or a function's body does not.
        self._released = False
        self._after_release = False
        self._carried: list[bool] = [False]
        # Per class being walked: resets its methods left unread, and whether any method reads
        # the peak (a tracer resets in `__enter__` and reads in `__exit__`); and, per function,
        # whether it is a method of the class around it.
        self._classes: list[_Body] = []
        self._methods: list[bool] = []
        self._class_function_depths: list[int] = []

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._released = self._carried[-1]

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._after_release = self._released

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._released = any(_releases(statement, self.context.imports) for statement in node.body)
        self._after_release = False

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._released = self._carried[-1]  # an `elif`/`else` starts where its `if` did

    def _open_compound(self, carries: bool) -> None:
        self._carried.append(self._released if carries else False)

    def _close_compound(self) -> None:
        self._carried.pop()
        self._released = False  # the compound statement as a whole is no release

    def _open_branches(self, node: cst.If | cst.With | cst.Try) -> None:
        self._open_compound(True)

    def _close_branches(self, node: cst.If | cst.With | cst.Try) -> None:
        self._close_compound()

    # Each branch of an `if`/`with`/`try` starts where the statement before it left off.
    visit_If = visit_With = visit_Try = _open_branches
    leave_If = leave_With = leave_Try = _close_branches

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._open_compound(False)
        self._classes.append(_Body())
        self._class_function_depths.append(len(self._methods))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._close_compound()
        self._class_function_depths.pop()
        tracer = self._classes.pop()
        if not tracer.reads_peak:
            self._report_unread(tracer.resets)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._open_compound(False)
        self._methods.append(bool(self._classes) and len(self._methods) == self._class_depth())
        self._function_starts.append(len(self._bodies))
        self._bodies.append(_Body())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._close_scope(method=self._methods.pop())
        self._function_starts.pop()
        self._close_compound()

    def visit_For(self, node: cst.For) -> None:
        self._open_compound(False)
        self._bodies.append(_Body())

    def leave_For(self, node: cst.For) -> None:
        self._close_scope()
        self._close_compound()

    def visit_While(self, node: cst.While) -> None:
        self._open_compound(False)
        self._bodies.append(_Body())

    def leave_While(self, node: cst.While) -> None:
        self._close_scope()
        self._close_compound()

    def leave_Module(self, node: cst.Module) -> None:
        self._close_scope()

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.imports.call_name(node)
        if qualified is None or not qualified.startswith("torch."):
            return
        if qualified in _EMPTY_CACHE:
            # Under `if step % eval_every == 0:` it frees what a periodic eval or sample left.
            if self.guarded:
                return
            table = _AFTER_RELEASE if self._after_release else self.severity
            self.report(
                node,
                "`empty_cache()` every iteration returns cached blocks to the driver; the next "
                "iteration re-allocates them through cudaMalloc (and freeing syncs the device)",
                severity=_outside_benchmarks(table, self.context.heat.where()),
            )
        elif qualified in _RESET_PEAK:
            self._bodies[-1].resets.append((node, self.context.heat.here()))
        elif qualified.rsplit(".", 1)[-1] in _PEAK_READS:
            for body in self._bodies[self._function_starts[-1]:]:
                body.reads_peak = True
            if self._classes:
                self._classes[-1].reads_peak = True

    def _class_depth(self) -> int:
        """How many functions enclose the innermost class: a `def` at that depth is its method."""
        return self._class_function_depths[-1] if self._class_function_depths else 0

    def _close_scope(self, method: bool = False) -> None:
        body = self._bodies.pop()
        if body.reads_peak:
            return
        if method:
            self._classes[-1].resets.extend(body.resets)  # judged when the whole class is seen
            return
        self._report_unread(body.resets)

    def _report_unread(self, resets: list[tuple[cst.Call, Where]]) -> None:
        for call, where in resets:
            self.report(
                call,
                "`reset_peak_memory_stats()` every iteration discards earlier peaks and nothing in "
                "this loop reads the peak: a peak read after the loop sees the last iteration only",
                where=where,
                severity=_outside_benchmarks(self.severity, where),
                fix="Reset the peak statistics once before the loop, or read the peak in the same iteration.",
            )

    VALID = (
        """\
import torch
for epoch in range(3):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
torch.cuda.empty_cache()
""",
        """\
import torch

def measure(configs):
    peaks = {}
    for config in configs:
        torch.cuda.reset_peak_memory_stats()
        run(config)
        peaks[config] = torch.cuda.max_memory_allocated()
    return peaks
""",
        """\
import torch
for name in checkpoints:
    model = load(name)
    torch.cuda.empty_cache()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    torch.cuda.empty_cache()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
from torch.cuda import empty_cache
for epoch in range(10):
    for x, y in train_loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    empty_cache()
""",
            line=7,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for step, batch in enumerate(loader):
    torch.cuda.reset_peak_memory_stats()
    loss = model(batch).sum()
    loss.backward()
print(torch.cuda.max_memory_allocated())
""",
            line=3,
            severity=Severity.MEDIUM,
        ),
    )


# Right after a release: the intended use once per epoch; every step, the same cost as ever.
_AFTER_RELEASE = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None)


def _releases(statement: cst.BaseSmallStatement, imports) -> bool:
    """`del x`, `x = None`, `gc.collect()`: a statement that drops what holds device memory."""
    if type(statement) is cst.Del:
        return True
    if type(statement) is cst.Assign:
        return type(statement.value) is cst.Name and statement.value.value == "None"
    if type(statement) is cst.Expr and type(statement.value) is cst.Call:
        return imports.call_name(statement.value) == "gc.collect"
    return False


def _outside_benchmarks(severity: SeverityByHeat, where: Where) -> DeferredSeverity:
    """Silent in a loop that is per-step only as a benchmark's innermost loop: between measured
    candidates, releasing memory is part of the measurement protocol, not a training cost."""

    def decide() -> SeverityByHeat | None:
        step_loop = next((loop for loop in where.loops if loop.is_step), None)
        benchmark_only = (
            step_loop is not None
            and where.function is not None
            and where.function.timing
            and not (step_loop.data_source or step_loop.trains)
        )
        return None if benchmark_only else severity

    return deferred(decide, outcomes=(severity,))
