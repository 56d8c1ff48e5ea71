"""The names a function hands to a backward: whatever a backward runs on is a tensor with a graph.

The value model learns this where the backward is (`loss.backward()`), which is too late for the
reads before it: `logits, loss = self.llm(x, y)` followed by `float(loss)` and only then
`scaler.scale(loss).backward()`. A look at the whole body first gives those names their kind
from the start. A Lightning `training_step` hands its loss to the framework's backward by
returning it (`return loss`, `return {"loss": loss}`).
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import dotted_name, method_name, receiver
from verifier.static.walk import iter_descendants

# `accelerator.backward(loss)`, `fabric.backward(loss)`, `self.manual_backward(loss)`,
# `torch.autograd.backward(loss)`: the loss is the first positional argument.
BACKWARD_BY_ARGUMENT = frozenset({"manual_backward"})
_LOSS_RETURNING_HOOKS = ("Lightning calls training_step()",)


def backward_operands(function: cst.FunctionDef, hook: str = "") -> frozenset[str]:
    """Plain names (`loss`, `out.loss`) that a backward runs on in `function`'s own body, and
    the loss a Lightning `training_step` returns."""
    return _operands(function.body, hook.startswith(_LOSS_RETURNING_HOOKS))


def module_backward_operands(module: cst.Module) -> frozenset[str]:
    """The same for a script's top-level code (its functions and classes are scanned apart)."""
    names: set[str] = set()
    for statement in module.body:
        if type(statement) not in (cst.FunctionDef, cst.ClassDef):
            names |= _operands(statement, False)
    return frozenset(names)


def _operands(body: cst.CSTNode, returns_loss: bool) -> frozenset[str]:
    names: set[str] = set()
    # Names the code checks for a placeholder before using them (`if d_loss != 0:`, `if loss is
    # not None:`, `if loss:`): the code itself says they may hold a plain 0 or None, so a
    # backward on them somewhere does not make them a tensor everywhere.
    checked: set[str] = set()
    for node in iter_descendants(body):
        kind = type(node)
        if kind is cst.Call:
            _add(names, backward_operand(node))
        elif kind is cst.Return and returns_loss and node.value is not None:
            _add(names, _returned_loss(node.value))
        elif kind in (cst.If, cst.While, cst.IfExp):
            checked.update(_placeholder_checks(node.test))
    return frozenset(names - checked)


def _placeholder_checks(test: cst.BaseExpression) -> set[str]:
    """The names a test checks against 0, None or for truth (`x != 0`, `x is not None`, `x`, `not x`)."""
    if type(test) is cst.BooleanOperation:
        return _placeholder_checks(test.left) | _placeholder_checks(test.right)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return _placeholder_checks(test.expression)
    if type(test) in (cst.Name, cst.Attribute):
        name = dotted_name(test)
        return {name} if name is not None else set()
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        sides = (test.left, comparison.comparator)
        for side, other in (sides, sides[::-1]):
            if _is_placeholder(other) and type(comparison.operator) in _PLACEHOLDER_TESTS:
                name = dotted_name(side)
                return {name} if name is not None else set()
    return set()


_PLACEHOLDER_TESTS = (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)


def _is_placeholder(node: cst.BaseExpression) -> bool:
    if type(node) is cst.Name:
        return node.value == "None"
    return type(node) in (cst.Integer, cst.Float) and node.evaluated_value == 0


def backward_operand(call: cst.Call, owner_is_tensor: bool = False) -> cst.BaseExpression | None:
    """What `call` runs a backward on, if it is a backward: `loss` in `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss / n)`, `self.manual_backward(loss)`.
    `t.backward(grad)` runs on `t` when the caller knows `t` is a tensor (`owner_is_tensor`)."""
    method = method_name(call)
    if method in BACKWARD_BY_ARGUMENT:
        return _leading_operand(_first_positional(call))
    if method != "backward":
        return None
    owner = receiver(call)
    if type(owner) is cst.Call and method_name(owner) == "scale":
        return _leading_operand(_first_positional(owner))
    if type(owner) in (cst.Name, cst.Attribute) and (owner_is_tensor or _first_positional(call) is None):
        return owner  # `loss.backward()`, `loss.backward(retain_graph=True)`
    # `accelerator.backward(loss)`, `model_engine.backward(loss)`, `torch.autograd.backward(loss)`
    return _leading_operand(_first_positional(call))


def _leading_operand(operand: cst.BaseExpression | None) -> cst.BaseExpression | None:
    while type(operand) is cst.BinaryOperation:
        operand = operand.left  # `fabric.backward(loss / accumulation)`: the loss comes first
    return operand


def _returned_loss(value: cst.BaseExpression) -> cst.BaseExpression | None:
    if type(value) is cst.Dict:
        for element in value.elements:
            if type(element) is cst.DictElement and type(element.key) is cst.SimpleString:
                if element.key.evaluated_value == "loss":
                    return element.value
        return None
    return value


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def _add(names: set[str], operand: cst.BaseExpression | None) -> None:
    name = dotted_name(operand) if operand is not None else None
    if name is not None and name != "self":
        names.add(name)
