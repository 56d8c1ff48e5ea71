"""VP406 quadratic-tensor-growth: `x = torch.cat([x, new])` in a loop copies everything so far, every time.

Reported when, inside a loop of the same function, a name (or `self.attr`) is rebound to a
concatenation that contains it whole: `torch.cat/concat/concatenate/hstack/vstack/dstack/
column_stack/row_stack([x, new])`, or `torch.cat/stack([*x, new])`. Growth that is cut inside the
loop (the name is rebound to anything else there: `x = x[-window:]`, `x = new`, a `for x in`
target) is bounded and not reported, except a first-iteration start (`if x is None: x = new`,
`if i == 0: x = new`), which is where such growth usually begins; nor are loops with a small literal trip count
(`for _ in range(4)`), nor joins of a slice (`torch.cat([x[:, :1], y])`). Nor is the token
sequence of autoregressive decoding when the loop passes it (or a value computed from it, such
as `idx[:, -block:]`) to a model every iteration: the forward already reads the whole sequence,
so the extra copy is a constant factor; the logits or scores collected beside it are reported.

Severity follows how long the growth can run, not the per-step cost of one copy: growing once
per training step (or inside every step) is MEDIUM, because its total cost is quadratic in the
number of steps; growth in an evaluation, generation or one-off loop is LOW.
"""

from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.heat import Where, is_model_name
from verifier.static.names import dotted_name, keyword_arg, names_in, positional_arg, terminal_name
from verifier.static.rule import Invalid, Rule
from verifier.static.suites import MarkedSuites, SuiteVisits

_GROWERS = frozenset(
    f"torch.{name}"
    for name in ("cat", "concat", "concatenate", "hstack", "vstack", "dstack", "column_stack", "row_stack")
)
_STACKS = frozenset({"torch.stack"})
# A loop that runs at most this many times (a literal `range(n)` or a literal sequence) is bounded.
_SMALL_TRIP_COUNT = 16


@dataclass(eq=False)
class _Growth:
    name: str
    call: cst.Call
    where: Where


@dataclass(eq=False)
class _Loop:
    # Names rebound in the loop body by anything but a growth of themselves.
    rebound: set[str] = field(default_factory=set)
    growths: list[_Growth] = field(default_factory=list)
    bounded: bool = False
    # Kept as nodes and read only when the loop grows something (rare): assignments and model calls.
    assignments: list[cst.Assign] = field(default_factory=list)
    forwards: list[cst.Call] = field(default_factory=list)


class QuadraticTensorGrowth(SuiteVisits, Rule):
    code = "VP406"
    name = "quadratic-tensor-growth"
    category = Category.ALGORITHMIC
    # In preview: on the judged real code strict 0.04, lenient 0.61 (small per-class or per-block
    # concatenations; docs/rule-precision.md), below the default-set bar.
    preview: ClassVar[bool] = True
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=Severity.LOW, eval=Severity.LOW)
    cost = "tensor growth by concatenation: the whole tensor copied again every iteration"
    tokens = ("cat(", "concat", "stack(")
    summary = (
        "Finds `x = torch.cat([x, new])` inside a loop: each iteration copies everything gathered "
        "so far, so the loop costs O(n²) copies and allocations instead of O(n)."
    )
    why = (
        "`torch.cat` always allocates a new tensor and copies all its inputs. Growing a tensor by "
        "concatenating onto itself copies 1, 2, 3, ... n chunks: n²/2 chunk copies and n "
        "allocations of ever larger blocks (on a GPU, one kernel and one caching-allocator block "
        "per iteration, which fragments memory). Collecting the pieces in a list and joining once, "
        "or writing into a preallocated tensor, copies each chunk once. Measured on one CPU thread "
        "(`pytest -m slow tests/benchmarks/test_bench_growth_and_loaders.py`, rows of 256 floats): "
        "1024 iterations of `x = torch.cat([x, row])` median 15.9 ms, against 0.97 ms for a list "
        "and one `torch.cat` and 2.9 ms for slice writes into a preallocated tensor; at 256 "
        "iterations 1.33 ms against 0.22 ms and 0.70 ms (four times the iterations, twelve times "
        "the time)."
    )
    example = """\
features = torch.empty(0, dim, device=device)
with torch.no_grad():
    for images, _ in loader:
        batch_features = encoder(images.to(device, non_blocking=True))
        features = torch.cat([features, batch_features])
"""
    use_instead = """\
chunks = []
with torch.no_grad():
    for images, _ in loader:
        chunks.append(encoder(images.to(device, non_blocking=True)))
features = torch.cat(chunks)
"""
    fix = (
        "Append the pieces to a list and call `torch.cat` once after the loop, or preallocate the "
        "full tensor and write each piece into its slice."
    )
    references = (
        "https://pytorch.org/docs/stable/generated/torch.cat.html",
        "https://pytorch.org/docs/stable/generated/torch.empty.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per function (the module first), the loops open around the walk.
        self._loops: list[list[_Loop]] = [[]]
        # The bodies of `if x is None:` / `if i == 0:` being walked: a binding there starts the
        # growth on the first iteration, it does not cut it.
        self._first_pass_bodies = MarkedSuites()

    def visit_If(self, node: cst.If) -> None:
        if _is_first_pass_test(node.test):
            self._first_pass_bodies.mark(node.body)

    def open_suite(self, body: cst.BaseSuite) -> None:
        self._first_pass_bodies.enter(body)

    def close_suite(self, body: cst.BaseSuite) -> None:
        self._first_pass_bodies.leave(body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._loops.append([])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._loops.pop()

    def visit_For(self, node: cst.For) -> None:
        self._open_loop(_is_small_loop(node.iter))
        self._rebind(node.target)

    def leave_For(self, node: cst.For) -> None:
        self._close_loop()

    def visit_While(self, node: cst.While) -> None:
        self._open_loop(False)

    def leave_While(self, node: cst.While) -> None:
        self._close_loop()

    def visit_Assign(self, node: cst.Assign) -> None:
        loops = self._loops[-1]
        name = dotted_name(node.targets[0].target) if len(node.targets) == 1 else None
        if loops and name is not None and type(node.value) is cst.Call and self._grows(node.value, name):
            loops[-1].growths.append(_Growth(name, node.value, self.context.heat.here()))
            return
        if loops:
            loops[-1].assignments.append(node)
        for target in node.targets:
            self._rebind(target.target)

    def visit_Call(self, node: cst.Call) -> None:
        loops = self._loops[-1]
        if loops and _is_forward(node):
            loops[-1].forwards.append(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._rebind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._rebind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._rebind(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._rebind(node.target)

    def _open_loop(self, bounded: bool) -> None:
        self._loops[-1].append(_Loop(bounded=bounded))

    def _close_loop(self) -> None:
        loop = self._loops[-1].pop()
        if loop.bounded:
            return
        for growth in loop.growths:
            if growth.name in loop.rebound or _model_reads(loop, growth.name):
                continue
            function = self.context.code_for(growth.call.func)
            self.report(
                growth.call,
                f"`{growth.name} = {function}([{growth.name}, ...])` in a loop copies all of `{growth.name}` "
                "on every iteration: the loop's cost grows with the square of its length; collect the "
                "pieces in a list and join once, or write into a preallocated tensor",
                where=growth.where,
            )

    def _rebind(self, target: cst.BaseExpression) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._rebind(element.value)
            return
        if type(target) is cst.StarredElement:
            self._rebind(target.value)
            return
        name = dotted_name(target)
        if name is None or self._first_pass_bodies.depth:
            return
        for loop in self._loops[-1]:
            loop.rebound.add(name)

    def _grows(self, call: cst.Call, name: str) -> bool:
        """`torch.cat([name, ...])`, `torch.cat((..., name))`, `torch.stack([*name, new])`."""
        qualified = self.context.imports.call_name(call)
        if qualified not in _GROWERS and qualified not in _STACKS:
            return False
        argument = positional_arg(call, 0) or keyword_arg(call, "tensors")
        if argument is None or type(argument.value) not in (cst.List, cst.Tuple):
            return False
        for element in argument.value.elements:
            starred = type(element) is cst.StarredElement
            if dotted_name(element.value) == name and (starred or qualified in _GROWERS):
                return True
        return False

    VALID = (
        """\
import torch
pieces = []
for x, y in loader:
    pieces.append(model(x).detach())
outputs = torch.cat(pieces)
""",
        """\
import torch
context = prompt
for _ in range(steps):
    token = sample(model(context))
    context = torch.cat([context, token], dim=1)
    context = context[:, -block_size:]
""",
        """\
import torch
for x in batches:
    h = encoder(x)
    h = torch.cat([h, positional], dim=-1)
    decoder(h).sum().backward()
""",
        """\
import torch
for _ in range(max_new_tokens):
    idx_cond = idx[:, -block_size:]
    logits = model(idx_cond)[:, -1, :]
    idx = torch.cat((idx, logits.argmax(-1, keepdim=True)), dim=1)
""",
        """\
import torch
x = torch.cat([x, pad])
for head in range(3):
    feats = torch.cat([feats, extra[head]], dim=1)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch

def generate(model, idx, max_new_tokens):
    scores = torch.empty(idx.size(0), 0, device=idx.device)
    for _ in range(max_new_tokens):
        logits = model(idx)[:, -1, :]
        idx_next = torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)
        scores = torch.cat((scores, logits.max(-1, keepdim=True).values), dim=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx, scores

print(generate(model, start, 500))
""",
            line=8,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
embeddings = torch.empty(0, 128, device=device)
for images, _ in train_loader:
    feats = model(images.to(device, non_blocking=True))
    loss = feats.pow(2).mean()
    loss.backward()
    optimizer.step()
    embeddings = torch.cat([embeddings, feats.detach()])
""",
            line=8,
            severity=Severity.MEDIUM,
        ),
    )


def _is_first_pass_test(test: cst.BaseExpression) -> bool:
    """`x is None`, `not x`, `i == 0`, `len(x) == 0`: true on the loop's first iteration only."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return True
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    operator, right = type(comparison.operator), comparison.comparator
    if operator is cst.Is:
        return type(right) is cst.Name and right.value == "None"
    return operator is cst.Equal and type(right) is cst.Integer and right.value == "0"


def _is_forward(call: cst.Call) -> bool:
    """`model(x)`, `self(x)`, `self.forward(x)`, `model.decode(x)`: a call that runs a model."""
    func = call.func
    if type(func) is cst.Name:
        return func.value == "self" or is_model_name(func.value)
    if type(func) is cst.Attribute:
        return is_model_name(func.attr.value) or is_model_name(terminal_name(func.value))
    return False


def _model_reads(loop: _Loop, name: str) -> bool:
    """Whether a model call in the loop takes `name` (or a value computed from it in the loop, such as
    `idx_cond = idx[:, -block:]`): autoregressive decoding already reads the whole sequence every
    iteration, so one more copy of it adds a constant factor, not a new order of cost."""
    if not loop.forwards:
        return False
    derived = {name}
    for _ in range(2):
        for assign in loop.assignments:
            if names_in(assign.value) & derived:
                derived |= {t for t in (dotted_name(target.target) for target in assign.targets) if t is not None}
    return any(names_in(arg.value) & derived for call in loop.forwards for arg in call.args)


def _is_small_loop(iterable: cst.BaseExpression) -> bool:
    """`range(4)`, `(a, b, c)`: a literal trip count too small for growth to matter."""
    if type(iterable) in (cst.List, cst.Tuple, cst.Set):
        return len(iterable.elements) <= _SMALL_TRIP_COUNT
    if type(iterable) is cst.Call and dotted_name(iterable.func) == "range" and len(iterable.args) == 1:
        bound = iterable.args[0].value
        return type(bound) is cst.Integer and int(bound.evaluated_value) <= _SMALL_TRIP_COUNT
    return False
