"""Lines for heat traces without libcst positions: Python's own parser gives every loop, call and
`def` its line at a fraction of the cost of libcst's position pass. The heat model numbers its
loops, calls and functions in the order of the engine's walk (`walk.py`: source order, except
where evaluation order differs), so this module visits Python's tree in that same order: the n-th
call of the walk is the n-th call here. Counts that differ mean the two parsers disagree, and the
caller falls back to positions."""

from __future__ import annotations

import ast
import warnings
from typing import NamedTuple

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

# The fields the engine's walk visits first (see `walk._FIELD_ORDER`), in its order; the rest
# follow in source order.
_FIRST = {
    ast.Assign: ("value", "targets"),
    ast.AugAssign: ("value", "target"),
    ast.AnnAssign: ("value", "annotation", "target"),
    ast.FunctionDef: ("decorator_list", "args", "returns", "body"),
    ast.AsyncFunctionDef: ("decorator_list", "args", "returns", "body"),
    ast.ClassDef: ("decorator_list", "bases", "keywords", "body"),
    ast.IfExp: ("test", "body", "orelse"),
    ast.ListComp: ("generators", "elt"),
    ast.SetComp: ("generators", "elt"),
    ast.GeneratorExp: ("generators", "elt"),
    ast.DictComp: ("generators", "key", "value"),
    # libcst declares a case's guard after its body, and the walk follows the declaration.
    ast.match_case: ("pattern", "body", "guard"),
}


class SourceLines(NamedTuple):
    """The first line of each loop, call and function definition, in the engine's walk order."""

    loops: list[int]
    calls: list[int]
    defs: list[int]


def source_lines(text: str) -> SourceLines | None:
    """None when Python's parser does not accept the text (libcst may still have)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
        lines = SourceLines([], [], [])
        _visit(tree, lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return lines


def _visit(node: ast.AST, lines: SourceLines) -> None:
    kind = type(node)
    if kind is ast.Call:
        lines.calls.append(node.lineno)
    elif kind in _LOOPS:
        lines.loops.append(node.lineno)
    elif kind in _DEFS:
        lines.defs.append(node.lineno)
    for child in _children(node, kind):
        _visit(child, lines)


def _children(node: ast.AST, kind: type) -> list[ast.AST]:
    first = _FIRST.get(kind)
    if first is not None:
        ordered: list[ast.AST] = []
        for name in first:
            value = getattr(node, name, None)
            if isinstance(value, list):
                ordered.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                ordered.append(value)
        return ordered
    children = [(key, child) for child in ast.iter_child_nodes(node) if (key := _start(child)) is not None]
    children.sort(key=lambda pair: pair[0])
    return [child for _, child in children]


def _start(node: ast.AST) -> tuple[int, int] | None:
    """Where a node starts; for nodes without a position (`arguments`, a comprehension's `for`),
    where their first positioned descendant does. None: nothing worth visiting below."""
    line = getattr(node, "lineno", None)
    if line is not None:
        return line, node.col_offset
    starts = [start for child in ast.iter_child_nodes(node) if (start := _start(child)) is not None]
    return min(starts) if starts else None
