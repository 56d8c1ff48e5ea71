"""Branches every caller decides: a test on a function's parameters that the arguments of every
visible call site answer the same way.

`def squeeze(x, x_mask=None): ... if x_mask is None: x_mask = torch.ones(...)` where every call
passes a mask, or `def generate(..., eos_id=None): ... if eos_id is not None: ...` where no call
passes one: the project pass binds each parameter to what every call site agrees on
(`bindings.py`: a literal `None`, `True` or `False`, passed or left as the default; a tensor; a
number or a value read into Python), and a test on such parameters is worked out here with
three-valued logic. A branch the callers never take runs in none of the runs the project makes:
its findings cannot claim a frequency (`conditions.py` treats it as an opt-in setting). A test
the facts do not decide, a parameter the function binds again, anything else: None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import libcst as cst

from verifier.static.bindings import LITERAL
from verifier.static.names import dotted_name

# Facts that say a value is there: not `None`.
_PRESENT = frozenset({"number", "source", "batch", "tensor", "list", "read"})
# Facts that say what a value is, for `isinstance(x, torch.Tensor)`.
_TENSOR_TAGS = frozenset({"tensor"})
_NOT_TENSOR = frozenset({"number"})
_TENSOR_TYPES = frozenset({"torch.Tensor", "Tensor"})


def parameter_facts(bound: tuple, params: frozenset[str], rebound: Callable[[str], bool]) -> dict[str, list[tuple]]:
    """The facts every caller agrees on per parameter the function never binds again."""
    facts: dict[str, list[tuple]] = {}
    for name, fact in bound:
        if name in params and not rebound(name):
            facts.setdefault(name, []).append(fact)
    return facts


def decided(test: cst.BaseExpression, facts: Mapping[str, list[tuple]]) -> bool | None:
    """The value of `test` in every call the project makes, or None when the facts do not say."""
    kind = type(test)
    if kind is cst.Name:
        return _truth(facts.get(test.value))
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = decided(test.expression, facts)
        return None if inner is None else not inner
    if kind is cst.BooleanOperation:
        left, right = decided(test.left, facts), decided(test.right, facts)
        if type(test.operator) is cst.And:
            return False if False in (left, right) else True if (left, right) == (True, True) else None
        return True if True in (left, right) else False if (left, right) == (False, False) else None
    if kind is cst.Comparison and len(test.comparisons) == 1:
        return _is_none(test, facts)
    if kind is cst.Call:
        return _is_tensor(test, facts)
    return None


def names_tested(test: cst.BaseExpression) -> list[str]:
    """The plain names a test of the forms `decided` works out reads."""
    kind = type(test)
    if kind is cst.Name:
        return [test.value]
    if kind is cst.UnaryOperation:
        return names_tested(test.expression)
    if kind is cst.BooleanOperation:
        return names_tested(test.left) + names_tested(test.right)
    if kind is cst.Comparison and type(test.left) is cst.Name:
        return [test.left.value]
    if kind is cst.Call and test.args and type(test.args[0].value) is cst.Name:
        return [test.args[0].value.value]
    return []


def _truth(known: list[tuple] | None) -> bool | None:
    for fact in known or ():
        if fact[0] == LITERAL:
            return fact[1] == "True"
    return None


def _is_none(test: cst.Comparison, facts: Mapping[str, list[tuple]]) -> bool | None:
    """`x is None` / `x is not None` of a parameter."""
    [comparison] = test.comparisons
    operator, right = type(comparison.operator), comparison.comparator
    if type(test.left) is not cst.Name or operator not in (cst.Is, cst.IsNot):
        return None
    if type(right) is not cst.Name or right.value != "None":
        return None
    none = _none(facts.get(test.left.value))
    if none is None:
        return None
    return none if operator is cst.Is else not none


def _none(known: list[tuple] | None) -> bool | None:
    for fact in known or ():
        if fact[0] == LITERAL:
            return fact[1] == "None"
        if fact[0] in _PRESENT:
            return False  # a tensor, a number, a batch: there (one read already is a tensor too)
    return None


def _is_tensor(call: cst.Call, facts: Mapping[str, list[tuple]]) -> bool | None:
    """`isinstance(x, torch.Tensor)`, `torch.is_tensor(x)` of a parameter."""
    name = dotted_name(call.func)
    args = [arg.value for arg in call.args]
    if name == "isinstance" and len(args) == 2 and dotted_name(args[1]) in _TENSOR_TYPES:
        subject = args[0]
    elif name in ("torch.is_tensor",) and len(args) == 1:
        subject = args[0]
    else:
        return None
    if type(subject) is not cst.Name:
        return None
    for fact in facts.get(subject.value) or ():
        if fact[0] in _TENSOR_TAGS:
            return True
        if fact[0] in _NOT_TENSOR or fact[0] == LITERAL:
            return False
    return None
