"""VP207 host-read-in-compiled-region: a host read of a tensor inside code that torch.compile traces.

Compiled regions: functions decorated with `@torch.compile` / `@torch.compile(...)`, functions
of this module passed to `torch.compile(fn)`, and the `forward` of a class of this module whose
instance is compiled here (`model = torch.compile(Net())`, `model = torch.compile(model)`,
`model.compile()`). Host reads there (`.item()`, `.tolist()`, `.numpy()`, `float(t)`,
`print(t)`, an f-string of a tensor, `if t:` / `if t.any():` / `while t > 0:`) cannot be traced:
Dynamo breaks the graph at each one, every call. Code under `if torch.compiler.is_compiling():`
(or `torch._dynamo.is_compiling()`, `torch.jit.is_scripting()`/`is_tracing()`) and nested
functions are left out. A compiled forward takes the heat of the loop that calls the compiled
instance in this module; without one it is LOW.
"""

from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.guards import GuardedRule
from verifier.static.heat import Where
from verifier.static.names import dotted_name, method_name, positional_arg, receiver
from verifier.static.rule import Invalid
from verifier.static.syncs import sync_of_call, sync_of_fstring, sync_of_test
from verifier.static.walk import iter_descendants

_COMPILE = "torch.compile"
_TRACING_CHECKS = frozenset(
    {"torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._dynamo.is_compiling",
     "torch.jit.is_scripting", "torch.jit.is_tracing", "torch._utils.is_compiling"}
)
# Reads that leave the graph; `.cpu()` and `.to("cpu")` are traced like any other copy.
_BREAKING_READS = frozenset({".item()", ".tolist()", ".numpy()", "float()", "int()", "bool()", "print()",
                             "str()", "repr()", "format()", "f-string"})
# Methods whose result is a tensor when their receiver is one (for annotated parameters).
_TENSOR_RESULTS = frozenset(
    {"sum", "mean", "max", "min", "amax", "amin", "any", "all", "abs", "norm", "float", "detach",
     "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "count_nonzero", "prod", "std"}
)


@dataclass(eq=False)
class _Region:
    """A function the walk is in: compiled for sure (decorated), or compiled if this module
    later compiles its class or passes it to `torch.compile` (`owner`)."""

    name: str
    compiled: bool
    owner: str | None
    # Parameters annotated as tensors, and locals computed from them.
    tensors: set[str]
    # After `if torch.compiler.is_compiling(): return ...` the rest runs only eagerly.
    eager_rest: bool = False


@dataclass(eq=False)
class _Pending:
    node: cst.CSTNode
    message: str
    where: Where
    owner: str


class HostReadInCompiledRegion(GuardedRule):
    code = "VP207"
    name = "host-read-in-compiled-region"
    category = Category.SYNC
    # No finding on the real-code set to judge it by yet (see the module docstring).
    preview: ClassVar[bool] = True
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=Severity.LOW, eval=Severity.LOW)
    cost = "a graph break and a host read inside a compiled region"
    summary = (
        "Finds host reads of tensors inside code compiled with `torch.compile`: `.item()`, "
        "`.tolist()`, `print(t)`, f-strings of tensors and Python `if`/`while` on a tensor's value, "
        "in a `@torch.compile` function or the `forward` of a module compiled in the same file."
    )
    why = (
        "TorchDynamo cannot trace a value that only exists on the host: at each read it ends the "
        "graph, runs the read eagerly (a device sync) and starts a new graph after it. Every call "
        "pays the sync, the lost fusion across the break and the guard checks of two graphs; a "
        "data-dependent branch may also recompile. `TORCH_LOGS=graph_breaks` lists them."
    )
    example = """\
class Net(nn.Module):
    def forward(self, x):
        h = self.body(x)
        if h.abs().max() > 1e4:
            print("activations exploding")
        return self.head(h)

model = torch.compile(Net().to(device))
"""
    use_instead = """\
class Net(nn.Module):
    def forward(self, x):
        h = self.body(x)
        if not torch.compiler.is_compiling() and h.abs().max() > 1e4:
            print("activations exploding")
        return self.head(h)

model = torch.compile(Net().to(device))
"""
    fix = (
        "Keep the region on the device (`torch.where`, masks, returning the tensor and reading it "
        "outside), or move the check under `if not torch.compiler.is_compiling():`."
    )
    tokens = ("compile",)
    references = (
        "https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html",
        "https://pytorch.org/docs/stable/torch.compiler_faq.html#graph-breaks",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._classes: list[str] = []
        self._known_classes: set[str] = set()
        self._functions: set[str] = set()
        self._regions: list[_Region | None] = []
        self._tracing_checks = 0
        self._tracing_ifs: set[int] = set()
        # Instance names -> class names; names compiled here -> what they compile.
        self._instances: dict[str, str] = {}
        self._compiled: set[str] = set()
        self._compiled_instances: set[str] = set()
        self._compiled_from: dict[str, str] = {}
        self._call_sites: dict[str, list[Where]] = {}
        self._pending: list[_Pending] = []

    # ----- where the walk is -----

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)
        self._known_classes.add(node.name.value)
        self._regions.append(None)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()
        self._regions.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        in_class = bool(self._regions) and self._regions[-1] is None and bool(self._classes)
        nested = any(region is not None for region in self._regions)
        region = None
        if not nested:
            decorated = any(self._is_compile(d.decorator) for d in node.decorators)
            name = node.name.value
            owner = None
            if in_class and name == "forward":
                owner = self._classes[-1]
            elif not self._classes:
                owner = name
                self._functions.add(name)
            if decorated or owner is not None:
                region = _Region(name, decorated, owner, self._tensor_params(node))
        # A nested function (or a method of another kind) is its own region: nothing compiled.
        self._regions.append(region if not nested else _Region(node.name.value, False, None, set()))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._regions.pop()

    def visit_If(self, node: cst.If) -> None:
        if self._mentions_tracing_check(node.test):
            self._tracing_ifs.add(id(node))
            self._tracing_checks += 1
        else:
            self._branch_test(node.test)

    def leave_If(self, node: cst.If) -> None:
        if id(node) in self._tracing_ifs:
            self._tracing_ifs.discard(id(node))
            self._tracing_checks -= 1
            region = self._regions[-1] if self._regions else None
            if region is not None and node.orelse is None and _returns(node) and type(node.test) is cst.Call:
                region.eager_rest = True

    def visit_While(self, node: cst.While) -> None:
        self._branch_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if not self._mentions_tracing_check(node.test):
            self._branch_test(node.test)

    # ----- what gets compiled -----

    def leave_Assign(self, node: cst.Assign) -> None:
        value = node.value
        targets = [dotted_name(t.target) for t in node.targets]
        region = self._region()
        if region is not None:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    if self._tensorish(value):
                        region.tensors.add(target.target.value)
                    else:
                        region.tensors.discard(target.target.value)
        if type(value) is not cst.Call:
            return
        compiled = self._compiled_thing(value)
        for target in targets:
            if target is None:
                continue
            if compiled is not None:
                self._compiled_instances.add(target)
                self._compiled_from[target] = compiled
                made = compiled[6:] if compiled.startswith("class:") else self._instances.get(compiled)
                if made is not None:
                    self._instances[target] = made
            else:
                made = self._class_made_by(value)
                if made is not None:
                    self._instances[target] = made
                else:
                    self._instances.pop(target, None)

    def visit_Call(self, node: cst.Call) -> None:
        compiled = self._compiled_thing(node)
        if compiled is not None:
            self._compiled.add(compiled)
        elif method_name(node) == "compile" and not node.args:
            owner = dotted_name(receiver(node))
            if owner is not None:
                self._compiled.add(owner)
                self._compiled_instances.add(owner)
        callee = dotted_name(node.func)
        if callee is not None and (callee in self._instances or callee in self._compiled_instances):
            where = self.context.heat.here()
            if where.loops:
                self._call_sites.setdefault(callee, []).append(where)
        if self._region() is not None:  # reads matter only inside a compiled region
            self._check_read(sync_of_call(node, self.context.facts, self.context.imports), node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if self._region() is None:
            return
        if sync_of_fstring(node, self.context.facts) is not None or self._tensorish(node.expression):
            self._add(node, f"f-string of `{self.context.code_for(node.expression)}`")

    def _compiled_thing(self, call: cst.Call) -> str | None:
        """`torch.compile(x)`: the name compiled (an instance, a function, or a class made inline)."""
        if self.context.imports.call_name(call) != _COMPILE:
            return None
        first = positional_arg(call, 0)
        if first is None:
            return None
        value = first.value
        # `torch.compile(Net().to(device))`, `torch.compile(Net(cfg))`.
        while type(value) is cst.Call and type(value.func) is cst.Attribute and method_name(value) in ("to", "cuda"):
            value = value.func.value
        if type(value) is cst.Call:
            made = self._class_made_by(value)
            return f"class:{made}" if made is not None else None
        return dotted_name(value)

    def _class_made_by(self, call: cst.Call) -> str | None:
        while type(call.func) is cst.Attribute and method_name(call) in ("to", "cuda") and type(call.func.value) is cst.Call:
            call = call.func.value
        name = dotted_name(call.func)
        return name if name in self._known_classes else None

    def _is_compile(self, decorator: cst.BaseExpression) -> bool:
        target = decorator.func if type(decorator) is cst.Call else decorator
        return self.context.imports.qualified_name(target) == _COMPILE

    # ----- host reads -----

    def _branch_test(self, test: cst.BaseExpression) -> None:
        if self._region() is None:
            return
        sync = sync_of_test(test, self.context.facts, self.context.imports)
        if sync is not None or self._tensorish(test):
            self._add(test, f"Python branch on tensor `{self.context.code_for(test)}`")

    def _check_read(self, sync, node: cst.Call) -> None:
        if sync is None:
            # `print(x)` of an annotated tensor parameter.
            if dotted_name(node.func) == "print" and any(self._tensorish(a.value) for a in node.args):
                self._add(node, f"`{self.context.code_for(node)}`")
            return
        if sync.how in _BREAKING_READS:
            self._add(node, f"`{sync.how}` of `{self.context.code_for(sync.subject)}`")

    def _region(self) -> _Region | None:
        region = self._regions[-1] if self._regions else None
        if region is None or (not region.compiled and region.owner is None):
            return None
        if self._tracing_checks or region.eager_rest or self.guarded:
            return None
        return region

    def _add(self, node: cst.CSTNode, what: str) -> None:
        region = self._region()
        if region is None:
            return
        message = f"{what} inside compiled `{region.name}` breaks the graph {{often}}: it runs eagerly and syncs"
        if region.compiled:
            self.report(node, message)
        else:
            self._pending.append(_Pending(node, message, self.context.heat.here(), region.owner))

    def leave_Module(self, node: cst.Module) -> None:
        compiled_classes = {
            name.partition(":")[2] if name.startswith("class:") else self._instances.get(name)
            for name in self._compiled
        }
        for pending in self._pending:
            if pending.owner in compiled_classes or pending.owner in self._compiled and pending.owner in self._functions:
                self.report(pending.node, pending.message, where=self._hottest_caller(pending))

    def _hottest_caller(self, pending: _Pending) -> Where:
        """A compiled forward runs where its instance is called: the most deeply looped call."""
        sites = [
            where for name, wheres in self._call_sites.items()
            if pending.owner in (self._instances.get(name), self._compiled_from.get(name), name)
            for where in wheres
        ]
        return max(sites, key=lambda where: len(where.loops), default=pending.where)

    def _tensorish(self, node: cst.BaseExpression) -> bool:
        region = self._region()
        if self.context.facts.is_tensor(node):
            return True
        if region is None or not region.tensors:
            return False
        kind = type(node)
        if kind is cst.Name:
            return node.value in region.tensors
        if kind is cst.Call:
            owner = receiver(node)
            return method_name(node) in _TENSOR_RESULTS and owner is not None and self._tensorish(owner)
        if kind is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in node.comparisons):
                return False
            return any(self._tensorish(side) for side in (node.left, *(c.comparator for c in node.comparisons)))
        if kind is cst.BooleanOperation or kind is cst.BinaryOperation:
            return self._tensorish(node.left) or self._tensorish(node.right)
        if kind is cst.UnaryOperation:
            return self._tensorish(node.expression)
        return False

    def _tensor_params(self, node: cst.FunctionDef) -> set[str]:
        """Parameters annotated `torch.Tensor` / `Tensor`: tensors by the author's word."""
        names = []
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            annotation = param.annotation.annotation if param.annotation is not None else None
            if annotation is None:
                continue
            spelled = dotted_name(annotation) or ""
            if spelled == "Tensor" or self.context.imports.qualified_name(annotation) == "torch.Tensor":
                names.append(param.name.value)
        return set(names)

    def _mentions_tracing_check(self, test: cst.BaseExpression) -> bool:
        imports = self.context.imports
        return any(
            type(n) is cst.Call and imports.call_name(n) in _TRACING_CHECKS for n in (test, *iter_descendants(test))
        )

    VALID = (
        """\
import torch

@torch.compile
def step_fn(x: torch.Tensor, y: torch.Tensor):
    out = torch.where(x > 0, x, y)
    if not torch.compiler.is_compiling():
        print(out.sum().item())
    return out.sum()

for x, y in loader:
    loss = step_fn(x.cuda(), y.cuda())
    loss.backward()
    optimizer.step()
    print(loss.item())
""",
        """\
import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        h = self.body(x)
        if self.training and x.dim() == 3:
            h = h.flatten(1)
        return self.head(h).item()

model = Net().cuda()
for x in loader:
    loss = model(x.cuda())
""",
        """\
import torch

def helper(t: torch.Tensor):
    if t.any():
        return t.sum().item()
    return 0.0

compiled = torch.compile(other_fn)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch

@torch.compile(mode="max-autotune")
def train_step(x: torch.Tensor, y: torch.Tensor):
    if x.isnan().any():
        x = torch.nan_to_num(x)
    return ((x - y) ** 2).mean()

for x, y in loader:
    loss = train_step(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        h = self.body(x)
        scale = h.abs().max().item()
        return self.head(h / scale)

model = torch.compile(Net().cuda())
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
    )


def _returns(node: cst.If) -> bool:
    """Whether the `if` body ends by leaving the function (`return`/`raise`)."""
    body = node.body.body if type(node.body) is cst.IndentedBlock else (node.body,)
    last = body[-1] if body else None
    small = last.body if type(last) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) else ()
    return any(type(statement) in (cst.Return, cst.Raise) for statement in small)
