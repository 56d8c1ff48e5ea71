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

from collections.abc import Container, Mapping

import libcst as cst

from verifier.static.names import dotted_name

# `None`, `True` or `False` passed, or left as the parameter's default by a call that does not
# pass it: ("literal", "None") (`bindings.py` binds it; every caller agreeing on one decides).
LITERAL = "literal"
# The names a literal argument or default is spelt with.
LITERAL_NAMES = frozenset({"None", "True", "False"})
# Facts that say a value is there: not `None`.
_PRESENT = frozenset({"number", "source", "batch", "tensor", "list", "read"})
# Facts that say what a value is, for `isinstance(x, torch.Tensor)`.
_TENSOR_TAGS = frozenset({"tensor"})
_NOT_TENSOR = frozenset({"number"})
_TENSOR_TYPES = frozenset({"torch.Tensor", "Tensor"})


def parameter_facts(bound: tuple, params: frozenset[str]) -> dict[str, list[tuple]]:
    """The facts every caller agrees on, per parameter."""
    facts: dict[str, list[tuple]] = {}
    for name, fact in bound:
        if name in params:
            facts.setdefault(name, []).append(fact)
    return facts


def encode(test: cst.BaseExpression) -> tuple | None:
    """The test as data, in the forms `decided` works out (`("is_none", "x_mask")`, `("not", ...)`),
    so the project pass can ask the question again without the syntax tree; None for any other."""
    kind = type(test)
    if kind is cst.Name:
        return None if test.value in LITERAL_NAMES else ("name", test.value)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = encode(test.expression)
        return ("not", inner) if inner is not None else None
    if kind is cst.BooleanOperation:
        left, right = encode(test.left), encode(test.right)
        if left is None and right is None:
            return None
        return ("and" if type(test.operator) is cst.And else "or", left, right)
    if kind is cst.Comparison and len(test.comparisons) == 1:
        [comparison] = test.comparisons
        operator, right = type(comparison.operator), comparison.comparator
        if type(test.left) is cst.Name and operator in (cst.Is, cst.IsNot) and type(right) is cst.Name and right.value == "None":
            return ("is_none" if operator is cst.Is else "is_not_none", test.left.value)
        return None
    if kind is cst.Call:
        name = dotted_name(test.func)
        args = [arg.value for arg in test.args]
        if name == "isinstance" and len(args) == 2 and dotted_name(args[1]) in _TENSOR_TYPES and type(args[0]) is cst.Name:
            return ("is_tensor", args[0].value)
        if name == "torch.is_tensor" and len(args) == 1 and type(args[0]) is cst.Name:
            return ("is_tensor", args[0].value)
    return None


def decided(test: cst.BaseExpression, facts: Mapping[str, list[tuple]]) -> bool | None:
    """The value of `test` in every call the project makes, or None when the facts do not say."""
    form = encode(test)
    return None if form is None else decided_form(form, facts)


def decided_form(form: tuple | None, facts: Mapping[str, list[tuple]]) -> bool | None:
    """`decided` for a test as `encode` gives it (a part that is None is not known)."""
    if form is None:
        return None
    tag = form[0]
    if tag == "name":
        return _truth(facts.get(form[1]))
    if tag == "not":
        inner = decided_form(form[1], facts)
        return None if inner is None else not inner
    if tag in ("and", "or"):
        left, right = decided_form(form[1], facts), decided_form(form[2], facts)
        if tag == "and":
            return False if False in (left, right) else True if (left, right) == (True, True) else None
        return True if True in (left, right) else False if (left, right) == (False, False) else None
    if tag in ("is_none", "is_not_none"):
        none = _none(facts.get(form[1]))
        return None if none is None else none if tag == "is_none" else not none
    if tag == "is_tensor":
        return _is_tensor_fact(facts.get(form[1]))
    return None


def names_in(form: tuple | None) -> list[str]:
    """The parameter names a test as data reads."""
    if form is None:
        return []
    if form[0] in ("name", "is_none", "is_not_none", "is_tensor"):
        return [form[1]]
    return [name for part in form[1:] for name in names_in(part)]


def without(form: tuple | None, rebound: Container[str]) -> tuple | None:
    """The test as data with the parts that read a name bound again (not what the callers
    passed) left unknown (None); None when nothing is left."""
    if form is None:
        return None
    if form[0] in ("name", "is_none", "is_not_none", "is_tensor"):
        return None if form[1] in rebound else form
    if form[0] == "not":
        inner = without(form[1], rebound)
        return ("not", inner) if inner is not None else None
    left, right = without(form[1], rebound), without(form[2], rebound)
    return (form[0], left, right) if left is not None or right is not None else None


def would_change(question: tuple, bound: tuple, params: frozenset[str]) -> bool:
    """Whether what every caller passes (`bound`) decides a branch asked about in the first walk,
    `(function key, test as data, branch, the test read as data-dependent)`, so that the file's
    second walk classifies it otherwise: the branch no caller takes, or a data test they fix."""
    _, form, branch, data = question
    value = decided_form(form, parameter_facts(bound, params))
    return value is not None and (value is (branch != "body") or data)


def _truth(known: list[tuple] | None) -> bool | None:
    for fact in known or ():
        if fact[0] == LITERAL:
            return fact[1] == "True"
    return None


def _none(known: list[tuple] | None) -> bool | None:
    for fact in known or ():
        if fact[0] == LITERAL:
            return fact[1] == "None"
        if fact[0] in _PRESENT:
            return False  # a tensor, a number, a batch: there (one read already is a tensor too)
    return None


def _is_tensor_fact(known: list[tuple] | None) -> bool | None:
    for fact in known or ():
        if fact[0] in _TENSOR_TAGS:
            return True
        if fact[0] in _NOT_TENSOR or fact[0] == LITERAL:
            return False
    return None
