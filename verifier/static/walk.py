"""A read-only walk over a libcst tree.

libcst's own `visit()` rebuilds every node on the way back up, which costs as much as parsing;
reading the dataclass fields directly visits the same nodes in source order without copying.
Whitespace and punctuation fields are skipped: no rule looks at them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    {
        "asynchronous", "colon", "comma", "comment", "conversion", "default_indent",
        "default_newline", "dot", "empty_lines", "encoding", "equal", "first_colon", "footer",
        "has_trailing_newline", "header", "indent", "keyword", "lbrace", "lbracket",
        "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar", "newline",
        "operator", "posonly_ind", "rbrace", "rbracket", "relative", "rpar", "second_colon",
        "semicolon", "separator", "star", "trailing_comma", "trailing_whitespace",
    }
)

# Fields visited in evaluation order where it differs from declaration order: a value is
# read before its target is bound, and decorators run before the body they decorate.
_FIELD_ORDER = {
    cst.Assign: ("value", "targets"),
    cst.AugAssign: ("value", "target"),
    cst.AnnAssign: ("value", "annotation", "target"),
    cst.FunctionDef: ("decorators", "params", "returns", "name", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "name", "body"),
    cst.IfExp: ("test", "body", "orelse"),
    cst.ListComp: ("for_in", "elt"),
    cst.SetComp: ("for_in", "elt"),
    cst.GeneratorExp: ("for_in", "elt"),
    cst.DictComp: ("for_in", "key", "value"),
}

_fields_cache: dict[type, tuple[str, ...]] = {}
# Annotations of fields that never hold a node (`Name.value` is a str).
_PLAIN_VALUES = (str, bool, int, float)


def child_fields(node_type: type) -> tuple[str, ...]:
    """The names of the fields of `node_type` that can hold child nodes worth visiting."""
    names = _fields_cache.get(node_type)
    if names is None:
        declared = [
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace") and f.type not in _PLAIN_VALUES
        ]
        order = _FIELD_ORDER.get(node_type)
        if order:
            declared = [n for n in order if n in declared] + [n for n in declared if n not in order]
        names = _fields_cache[node_type] = tuple(declared)
    return names


# isinstance() against CSTNode goes through ABCMeta and dominates a walk; cache it per type.
_is_node_type: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _is_node_type.get(kind)
    if known is None:
        known = _is_node_type[kind] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Direct children of `node` in evaluation order."""
    found: list[cst.CSTNode] = []
    names = _fields_cache.get(type(node))
    if names is None:
        names = child_fields(type(node))
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(item for item in value if _is_node(item))
        elif _is_node(value):
            found.append(value)
    return found


class _Leave(tuple):
    """Marks a node whose children are done, on the walk's explicit stack."""


Hooks = dict[type, list[Callable[[cst.CSTNode], None]]]


def walk(node: cst.CSTNode, visitors: Hooks, leavers: Hooks) -> None:
    """Depth-first walk in evaluation order: each node's `visitors[type]` hooks on the way in,
    its `leavers[type]` hooks once its children are done.

    Iterative, so deeply nested expressions cannot exhaust the Python stack. Leaves that no
    hook asks for (most `Name`s, literals) are never put on the stack: a walk costs little
    more than the nodes somebody looks at.
    """
    child_fields(type(node))
    hooked = visitors.keys() | leavers.keys()
    # Per value type: worth a place on the stack (a node with children, or one a hook asks for)?
    worth: dict[type, bool] = {}

    def judge(value: object) -> bool:
        kind = type(value)
        verdict = worth[kind] = _is_node(value) and (bool(child_fields(kind)) or kind in hooked)
        return verdict

    stack: list = [node]
    pop = stack.pop
    while stack:
        current = pop()
        kind = type(current)
        if kind is _Leave:
            current = current[0]
            for leave in leavers[type(current)]:
                leave(current)
            continue
        hooks = visitors.get(kind)
        if hooks is not None:
            for visit in hooks:
                visit(current)
        if kind in leavers:
            stack.append(_Leave((current,)))
        below: list = []
        for name in _fields_cache[kind]:
            value = getattr(current, name)
            value_kind = type(value)
            if value_kind is tuple or value_kind is list:
                for item in value:
                    keep = worth.get(type(item))
                    if keep is None:
                        keep = judge(item)
                    if keep:
                        below.append(item)
            else:
                keep = worth.get(value_kind)
                if keep is None:
                    keep = judge(value)
                if keep:
                    below.append(value)
        if below:
            below.reverse()
            stack.extend(below)


def iter_descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` (not `node` itself), pre-order, without recursion.

    Children go on the stack last-first straight from the fields (no list per node): rules ask
    this of many small subtrees (an `if` test, a loop body), so its overhead is paid often.
    """
    stack = children(node)
    stack.reverse()
    pop, push = stack.pop, stack.append
    fields, known = _fields_cache, _is_node_type
    while stack:
        current = pop()
        yield current
        kind = type(current)
        names = fields.get(kind)
        if names is None:
            names = child_fields(kind)
        for name in reversed(names):
            value = getattr(current, name)
            value_kind = type(value)
            if value_kind is tuple or value_kind is list:
                for item in reversed(value):
                    is_node = known.get(type(item))
                    if is_node is None:
                        is_node = _is_node(item)
                    if is_node:
                        push(item)
            else:
                is_node = known.get(value_kind)
                if is_node is None:
                    is_node = _is_node(value)
                if is_node:
                    push(value)


def ends_with(body: cst.BaseSuite, kinds: tuple[type, ...]) -> bool:
    """The block's last statement is one of `kinds` (`continue`, `return`, `break`, `raise`)."""
    statements = body.body if type(body) is cst.IndentedBlock else [body]
    last = statements[-1] if statements else None
    small = last.body if type(last) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) else []
    return any(type(s) in kinds for s in small)
