"""VP405 gradients-zeroed-in-place: `zero_grad(set_to_none=False)` or grads zeroed by hand.

Covers `optimizer.zero_grad(set_to_none=False)` / `model.zero_grad(False)`, and, inside a loop
over parameters (`for p in model.parameters():`), `p.grad.zero_()`, `p.grad.data.zero_()`,
`p.grad.fill_(0)`, `p.grad.mul_(0)` and `p.grad = torch.zeros_like(...)` (the last only in a
function that calls `backward()`: elsewhere it may create missing gradients, e.g. to initialise
optimizer state). `zero_grad()` with the default (set_to_none=True since torch 2.0) and
`p.grad = None` are what it recommends.

Fix (unsafe): `zero_grad(set_to_none=False)` (or `zero_grad(False)`) becomes `zero_grad()`. Gradients
are then None rather than zero between steps, which code reading `p.grad` sees, and torch's
optimizers skip a parameter whose gradient is None where they would step one whose gradient is zero
(momentum and weight decay move it): behaviour may change, so it is applied only with `--unsafe-fixes`.
Gradients zeroed by hand get no fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.autofix import Fix
from verifier.static.call_edits import holds_comment, without_arguments
from verifier.static.deferred import deferred
from verifier.static.names import dotted_name, has_star_args, is_false, keyword_arg, method_name, positional_arg, receiver
from verifier.static.rule import Invalid, Rule

_ZEROING_METHODS = frozenset({"zero_", "fill_", "mul_"})
_ZERO_FACTORIES = frozenset({"torch.zeros_like", "torch.zeros"})


@dataclass(eq=False)
class _Function:
    """Names bound by the enclosing `for` targets, and whether backward() is called here."""

    loop_names: list[set[str]] = field(default_factory=list)
    calls_backward: bool = False


class GradientsZeroedInPlace(Rule):
    code = "VP405"
    name = "gradients-zeroed-in-place"
    category = Category.MEMORY
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "an extra kernel per parameter to write zeros that `set_to_none` would skip"
    tokens = ("zero_grad", ".grad")
    summary = (
        "Finds `zero_grad(set_to_none=False)` and gradients zeroed by hand in a loop over "
        "parameters (`p.grad.zero_()`, `p.grad = torch.zeros_like(p)`) in per-step code."
    )
    why = (
        "Zeroing writes every gradient tensor with a memset kernel each step and keeps the "
        "gradient memory allocated between steps. Setting gradients to None (the default of "
        "`zero_grad()` since torch 2.0) costs nothing, lets `backward()` write the first "
        "gradient instead of accumulating into zeros, and frees the memory until then."
    )
    example = """\
for x, y in loader:
    optimizer.zero_grad(set_to_none=False)
    criterion(model(x), y).backward()
    optimizer.step()
"""
    use_instead = """\
for x, y in loader:
    optimizer.zero_grad()  # set_to_none=True by default
    criterion(model(x), y).backward()
    optimizer.step()
"""
    fix = "Call `optimizer.zero_grad()` (set_to_none=True), or set `p.grad = None` instead of zeroing it."
    autofix = "`zero_grad(set_to_none=False)` becomes `zero_grad()`; gradients are then None, not zero, between steps"
    autofix_safe = False
    references = (
        "https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html",
        "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-parameter-grad-none-instead-of-model-zero-grad-or-optimizer-zero-grad",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: list[_Function] = [_Function()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(_Function())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_For(self, node: cst.For) -> None:
        self._functions[-1].loop_names.append(_bound_names(node.target))

    def leave_For(self, node: cst.For) -> None:
        self._functions[-1].loop_names.pop()

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method == "backward":
            self._functions[-1].calls_backward = True
        elif method == "zero_grad":
            if not has_star_args(node) and is_false(_set_to_none(node)):
                self.report(
                    node,
                    "`zero_grad(set_to_none=False)` writes zeros into every gradient each step",
                    autofix=self._default_zero_grad(node),
                )
        elif method in _ZEROING_METHODS and _writes_zero(node, method):
            grad = _loop_parameter_grad(receiver(node), self._functions[-1].loop_names)
            if grad is not None:
                self.report(node, f"`{grad}` is zeroed by hand in a loop over parameters every step")

    def _default_zero_grad(self, call: cst.Call) -> Fix | None:
        """`zero_grad()` for a call whose one argument is the `set_to_none=False` flag."""
        if len(call.args) != 1 or holds_comment(*call.args, call.whitespace_before_args):
            return None
        return self.offer_fix(call, without_arguments(call), "Call `zero_grad()` (set_to_none=True)")

    def visit_Assign(self, node: cst.Assign) -> None:
        if type(node.value) is not cst.Call or self.context.imports.call_name(node.value) not in _ZERO_FACTORIES:
            return
        function = self._functions[-1]
        for target in node.targets:
            grad = _loop_parameter_grad(target.target, function.loop_names)
            if grad is not None:
                # Without a backward() here the zeros may create missing grads (optimizer state init).
                self.report(
                    node,
                    f"`{grad}` is replaced with a new zero tensor in a loop over parameters every step",
                    severity=deferred(
                        lambda: self.severity if function.calls_backward else None, outcomes=(self.severity,)
                    ),
                )
                return

    VALID = (
        """\
for x, y in loader:
    optimizer.zero_grad()
    criterion(model(x), y).backward()
    optimizer.step()
""",
        """\
for x, y in loader:
    for p in model.parameters():
        p.grad = None
    criterion(model(x), y).backward()
    optimizer.step()
""",
        """\
optimizer.zero_grad(set_to_none=False)
for x, y in loader:
    optimizer.zero_grad(**zero_kwargs)
    criterion(model(x), y).backward()
    optimizer.step()
""",
        """\
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
    buffer.zero_()
""",
        """\
import torch

def init_optimizer_state(optimizer):
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = torch.zeros_like(param)
    optimizer.step()

def load_optimizers(optimizers):
    for optimizer in optimizers:
        init_optimizer_state(optimizer)
""",
    )
    INVALID = (
        Invalid(
            """\
for x, y in loader:
    optimizer.zero_grad(set_to_none=False)
    criterion(model(x), y).backward()
    optimizer.step()
""",
            line=2,
            severity=Severity.LOW,
            fixed="""\
for x, y in loader:
    optimizer.zero_grad()
    criterion(model(x), y).backward()
    optimizer.step()
""",
        ),
        Invalid(
            """\
for x, y in loader:
    for p in model.parameters():
        if p.grad is not None:
            p.grad.data.zero_()
    criterion(model(x), y).backward()
    optimizer.step()
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for step in range(num_steps):
    for name, param in model.named_parameters():
        param.grad = torch.zeros_like(param)
    model(batch).sum().backward()
    optimizer.step()
""",
            line=4,
            severity=Severity.LOW,
        ),
    )


def _set_to_none(call: cst.Call) -> cst.BaseExpression | None:
    arg = keyword_arg(call, "set_to_none") or positional_arg(call, 0)
    return arg.value if arg is not None else None


def _writes_zero(call: cst.Call, method: str) -> bool:
    if method == "zero_":
        return not call.args
    first = positional_arg(call, 0)
    return first is not None and type(first.value) in (cst.Integer, cst.Float) and first.value.evaluated_value == 0


def _loop_parameter_grad(node: cst.BaseExpression | None, loops: list[set[str]]) -> str | None:
    """`p.grad` (or `p.grad.data`) where `p` is bound by an enclosing `for`; its text, else None."""
    if type(node) is cst.Attribute and node.attr.value == "data":
        node = node.value
    if not (type(node) is cst.Attribute and node.attr.value == "grad" and type(node.value) is cst.Name):
        return None
    owner = node.value.value
    return dotted_name(node) if any(owner in names for names in loops) else None


def _bound_names(target: cst.BaseExpression) -> set[str]:
    if type(target) is cst.Name:
        return {target.value}
    if type(target) in (cst.Tuple, cst.List):
        return set().union(*(_bound_names(e.value) for e in target.elements))
    if type(target) is cst.StarredElement:
        return _bound_names(target.value)
    return set()
