"""Syncs nobody wrote: operators whose output size depends on the data, and device values
written into host memory (VP205, VP206).

A CUDA kernel's output must be allocated before it runs, so an operator whose output size
depends on the values (`nonzero`, boolean-mask indexing, `unique`, ...) copies a count back to
the host and waits for it. Those rules speak only about values with evidence that they live on
the accelerator (`on_device`): a tensor by the type facts that was not made on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from verifier.static.facts import NameFacts
from verifier.static.heat import is_model_name
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import (
    ImportTable,
    dotted_name,
    has_star_args,
    keyword_arg,
    method_name,
    positional_arg,
    receiver,
    terminal_name,
)
from verifier.static.placement import HostData
from verifier.static.places import Place
from verifier.static.tracker import Tracker
from verifier.static.transfers import device_move

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext

# torch functions and Tensor methods whose output size is read from the data on the host.
_SHAPE_FUNCTIONS = frozenset(
    {"torch.nonzero", "torch.argwhere", "torch.masked_select", "torch.unique", "torch.unique_consecutive"}
)
SHAPE_METHODS = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"})
# Element-wise tests and casts: their result is a boolean tensor where their input lives.
_MASK_METHODS = frozenset(
    {"bool", "eq", "ne", "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "logical_and",
     "logical_or", "logical_not", "logical_xor", "isin"}
)
_MASK_FUNCTIONS = frozenset(f"torch.{name}" for name in _MASK_METHODS - {"bool"})
# Methods whose result lives where their receiver does (the rest follow `facts`/`placement`).
_MOVES_TO_DEVICE = frozenset({"to", "cuda"})
# Tensor methods that keep a moved tensor a tensor on the same device.
_SAME_DEVICE_METHODS = frozenset(
    {"float", "half", "bfloat16", "long", "int", "bool", "view", "reshape", "flatten", "squeeze",
     "unsqueeze", "contiguous", "detach", "clone", "sum", "mean", "argmax", "argmin", "abs", "softmax",
     "log_softmax", "sigmoid", "exp", "log", "transpose", "permute", "t"}
)
# A name bound to `value.to(device)` / `value.cuda()`: a tensor copied to the accelerator.
_MOVED = "moved"


@dataclass(frozen=True)
class ShapeSync:
    node: cst.CSTNode
    # The value whose place decides whether the host waits (the mask, the repeats, the input).
    subject: cst.BaseExpression
    how: str


class DeviceValues(LambdaScopes, Tracker):
    """Evidence that an expression is an accelerator tensor, from the type facts and the host
    placement model; anything not proven is treated as not on the device. A name keeps the
    evidence its value had when bound (`R = host_rewards[i] + R` stays on the host)."""

    def __init__(self, context: ModuleContext) -> None:
        super().__init__(context)
        self.facts: NameFacts = context.facts
        self.host: HostData = context.tracker(HostData)
        self.imports: ImportTable = context.imports
        self._places = context.places
        # None: rebound to something this model does not follow; ask the facts.
        self._scopes: list[dict[str, bool | str | None]] = [{}]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if type(target) in (cst.Tuple, cst.List):
            values = value.elements if type(value) in (cst.Tuple, cst.List) else None
            paired = values is not None and len(values) == len(target.elements)
            for index, element in enumerate(target.elements):
                self._bind(element.value, values[index].value if paired else None)
            return
        name = dotted_name(target)
        if name is None:
            return
        if value is None:
            self._scopes[-1][name] = None
        elif type(value) is cst.Call and device_move(value, self.imports, self.facts) is not None:
            self._scopes[-1][name] = _MOVED
        else:
            self._scopes[-1][name] = self.on_device(value)

    def _recorded(self, node: cst.BaseExpression) -> bool | str | None:
        name = dotted_name(node)
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def moved(self, node: cst.BaseExpression) -> bool:
        """`x` after `x = batch_x.to(device)`, and same-device views and reductions of it."""
        kind = type(node)
        if kind is cst.Name or kind is cst.Attribute:
            return self._recorded(node) == _MOVED
        if kind is cst.Subscript:
            return self.moved(node.value)
        if kind is cst.Call:
            owner = receiver(node)
            return owner is not None and method_name(node) in _SAME_DEVICE_METHODS and self.moved(owner)
        return False

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.facts.is_tensor(node) or self.moved(node)

    def on_device(self, node: cst.BaseExpression) -> bool:
        kind = type(node)
        if self.moved(node):
            return True
        if kind in (cst.Name, cst.Attribute, cst.Call, cst.Subscript):
            shown = self._places.placement_of(node)
            if shown is not None and shown.place is Place.HOST:
                return False  # shown in host memory (a helper's host result, a host argument)
        if kind is cst.Name or kind is cst.Attribute:
            recorded = self._recorded(node)
            if recorded is not None:
                return bool(recorded) and self.facts.is_tensor(node)
        if kind in (cst.Comparison, cst.BinaryOperation):
            sides = (
                [node.left, *(c.comparator for c in node.comparisons)] if kind is cst.Comparison
                else [node.left, node.right]
            )
            tensors = [side for side in sides if self.is_tensor(side)]
            return bool(tensors) and all(self.on_device(side) for side in tensors)
        if kind is cst.UnaryOperation:
            return self.on_device(node.expression)
        if not self.facts.is_tensor(node) or self.host.origin_of(node) is not None:
            return False
        if kind is cst.Call:
            return self._call_on_device(node)
        if kind is cst.Subscript:
            return self.on_device(node.value)
        return True

    def _call_on_device(self, call: cst.Call) -> bool:
        """A call's result lives where its tensor inputs do; without any, a torch call not made
        on the host (see `placement`) or a model's forward is on the device, a helper is not
        (`make_weights()` may well build on the host)."""
        owner = receiver(call)
        if method_name(call) in _MOVES_TO_DEVICE:
            if device_move(call, self.imports, self.facts) is not None:
                return True
            # `.to("cpu")` leaves the device; `.to(torch.float16)` stays where it was.
            device = keyword_arg(call, "device") or positional_arg(call, 0)
            if device is not None and type(device.value) in (cst.SimpleString, cst.Call):
                return False
        if owner is not None and self.is_tensor(owner):
            return self.on_device(owner)
        inputs = [arg.value for arg in call.args if arg.keyword is None and self.is_tensor(arg.value)]
        if inputs:
            return all(self.on_device(value) for value in inputs)
        if (self.imports.call_name(call) or "").startswith("torch."):
            return True
        return is_model_name(terminal_name(call.func))

    def is_mask(self, node: cst.BaseExpression, masks: frozenset[str] | set[str] = frozenset()) -> bool:
        """A boolean tensor on the device: a comparison of device tensors, an element-wise test,
        `~mask`, `a & b`, or a name bound to one (`masks`)."""
        kind = type(node)
        if kind is cst.Name:
            return node.value in masks
        if kind is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in node.comparisons):
                return False
            return self.on_device(node)
        if kind is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
            return self.is_mask(node.expression, masks)
        if kind is cst.BinaryOperation and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor):
            return self.is_mask(node.left, masks) and self.is_mask(node.right, masks)
        if kind is cst.Call:
            qualified = self.imports.call_name(node) or ""
            if qualified in _MASK_FUNCTIONS:
                first = positional_arg(node, 0)
                return first is not None and self.on_device(first.value)
            owner = receiver(node)
            if method_name(node) in _MASK_METHODS and owner is not None and not qualified.startswith("torch."):
                return self.is_mask(owner, masks) or self.on_device(owner)
        return False


def shape_sync_of_call(call: cst.Call, values: DeviceValues) -> ShapeSync | None:
    """`torch.nonzero(t)`, `t.unique()`, one-argument `torch.where(c)`, `masked_select`,
    `repeat_interleave(repeats_tensor)` without `output_size`, on device values."""
    qualified = values.imports.call_name(call) or ""
    method = method_name(call)
    owner = receiver(call)
    if qualified == "torch.where":
        first = positional_arg(call, 0) or keyword_arg(call, "condition")
        if len(call.args) == 1 and first is not None and values.on_device(first.value):
            return ShapeSync(call, first.value, "torch.where(condition)")
        return None
    if qualified in _SHAPE_FUNCTIONS:
        first = positional_arg(call, 0) or keyword_arg(call, "input")
        if first is not None and values.on_device(first.value):
            return ShapeSync(call, first.value, f"{qualified}()")
        return None
    if qualified == "torch.repeat_interleave" or (method == "repeat_interleave" and not qualified):
        return _repeat_interleave(call, values, qualified)
    if method in SHAPE_METHODS and not qualified and owner is not None and values.on_device(owner):
        return ShapeSync(call, owner, f".{method}()")
    return None


def _repeat_interleave(call: cst.Call, values: DeviceValues, qualified: str) -> ShapeSync | None:
    """Only a tensor of repeats makes the size data-dependent; `output_size=` states it."""
    if keyword_arg(call, "output_size") is not None or has_star_args(call):
        return None
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keyword = keyword_arg(call, "repeats")
    if qualified:
        # `torch.repeat_interleave(repeats)` or `torch.repeat_interleave(input, repeats, ...)`.
        repeats = keyword.value if keyword is not None else (
            positional[1] if len(positional) > 1 else positional[0] if len(positional) == 1 else None
        )
    else:
        repeats = keyword.value if keyword is not None else positional[0] if positional else None
    if repeats is None or not values.on_device(repeats):
        return None
    return ShapeSync(call, repeats, "repeat_interleave(repeats_tensor)")
