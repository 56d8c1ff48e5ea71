"""Applying the chosen fixes of one file in one libcst pass.

The file is parsed, each edit finds its node by kind and position and must hold the code the
analysis saw (otherwise the file changed since, and that fix is left out), and one transformer
puts every replacement in place. libcst prints everything else exactly as it was read: comments,
blank lines, quotes and line endings. The result must parse for libcst and compile for Python
(compiled, never run), or the file gets none of the fixes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from verifier.findings import Edit, Finding

# A position in a file: line (from 1) and column (from 0), as libcst counts them.
Position = tuple[int, int]


class FixFailed(Exception):
    """The fixes of a file cannot be applied; the message says why."""


@dataclass(frozen=True)
class FixedText:
    """A file's text with fixes applied, which of them were, and where old positions went."""

    text: str
    applied: tuple[Finding, ...]
    # Fixes whose node no longer holds the code the analysis saw: the file changed since.
    stale: tuple[Finding, ...]
    moved: Callable[[Position], Position]


def apply_fixes(text: str, findings: Sequence[Finding]) -> FixedText:
    """Apply the fixes of `findings` (chosen not to overlap) to `text`; FixFailed if the result
    would not parse, or a replacement does not."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise FixFailed(f"the file no longer parses ({error.message})") from None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = _nodes_at(positions, {_key(e) for f in findings for e in f.autofix.edits})
    replacements: dict[cst.CSTNode, cst.CSTNode] = {}
    applied, stale = [], []
    for finding in findings:
        found = [nodes.get(_key(edit)) for edit in finding.autofix.edits]
        if any(node is None or module.code_for_node(node) != edit.original
               for node, edit in zip(found, finding.autofix.edits)):
            stale.append(finding)
            continue
        for node, edit in zip(found, finding.autofix.edits):
            replacements[node] = _parsed_replacement(edit, node, module)
        applied.append(finding)
    fixed = module.visit(_Replace(replacements))
    new_text = fixed.code
    _check_compiles(text, new_text)
    spans = _moves(positions, MetadataWrapper(fixed, unsafe_skip_copy=True).resolve(PositionProvider), replacements)
    return FixedText(new_text, tuple(applied), tuple(stale), lambda position: _moved(position, spans))


def _key(edit: Edit) -> tuple:
    return edit.kind, edit.line, edit.column - 1, edit.end_line, edit.end_column - 1


def _nodes_at(positions, wanted: set[tuple]) -> dict[tuple, cst.CSTNode]:
    found = {}
    for node, span in positions.items():
        key = (type(node).__name__, span.start.line, span.start.column, span.end.line, span.end.column)
        if key in wanted:
            found[key] = node
    return found


def _parsed_replacement(edit: Edit, node: cst.CSTNode, module: cst.Module) -> cst.CSTNode:
    if not isinstance(node, cst.BaseExpression):
        raise FixFailed(f"a fix replaces a {edit.kind}, which is not an expression")
    try:
        return cst.parse_expression(edit.replacement, config=module.config_for_parsing)
    except cst.ParserSyntaxError:
        raise FixFailed(f"a fix's replacement does not parse: {edit.replacement!r}") from None


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, cst.CSTNode]) -> None:
        super().__init__()
        self._replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self._replacements.get(original_node, updated_node)


def _check_compiles(original: str, text: str) -> None:
    """The fixed text parses for libcst and compiles for Python (an `await` or `yield` put where
    none may stand parses, but does not compile), unless the original did not compile either."""
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise FixFailed(f"the fixed file would not parse ({error.message})") from None
    problem = _compile_error(text)
    if problem is not None and _compile_error(original) is None:
        raise FixFailed(f"the fixed file would not compile ({problem})")


def _compile_error(text: str) -> str | None:
    """Why Python refuses to compile `text` (it is compiled, never run), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are the code's own
            compile(text, "<fixed>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return getattr(error, "msg", None) or str(error)
    except (RecursionError, MemoryError):
        return None  # too deep for this check; libcst parsed it
    return None


def _moves(before, after, replacements: dict[cst.CSTNode, cst.CSTNode]) -> list[tuple[Position, Position, Position, Position]]:
    """Per replaced node, in file order: its old start and end, and its replacement's."""
    spans = []
    for old, new in replacements.items():
        was, now = before[old], after[new]
        spans.append(((was.start.line, was.start.column), (was.end.line, was.end.column),
                      (now.start.line, now.start.column), (now.end.line, now.end.column)))
    return sorted(spans)


def _moved(position: Position, spans: list[tuple[Position, Position, Position, Position]]) -> Position:
    """Where a position of the old text is in the new one: unchanged before the first edit, inside
    a replaced node at its replacement's start, after one shifted as that node's end moved."""
    last = None
    for span in spans:
        if span[0] <= position:
            last = span
    if last is None:
        return position
    old_start, old_end, new_start, new_end = last
    if position < old_end:
        return new_start
    line, column = position
    if line == old_end[0]:
        return new_end[0], new_end[1] + column - old_end[1]
    return new_end[0] + line - old_end[0], column
