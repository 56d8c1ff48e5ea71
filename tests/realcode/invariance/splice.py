"""Rebuild a libcst module with some statements replaced or moved, and map the original lines
onto the rebuilt files.

libcst's transformers construct every node anew, so an old tree and its transformed copy share
no node and the line map of a rewrite could only be guessed from the text. Here an edit names
the nodes to replace (by identity) and only their ancestors are rebuilt: every other node, and
every node moved elsewhere (into a new function, another module, under an `if`), is the same
object in the new tree, and its new position says where its lines went.

Lines are mapped per statement: a simple statement, or a compound statement's header, found
in the new tree maps its lines one to one (re-indenting never changes a statement's line count;
libcst re-indents continuation lines and leaves string contents alone); a statement that is
gone maps to nothing, unless a rewrite pins it to the statement that took its place
(`Splice.pin`). Comment and blank lines between statements are not mapped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

LineMap = dict[tuple[str, int], tuple[str, int] | None]

# Nodes that own lines: statements, and the clause headers (`else:`, `except ...:`, `finally:`).
_LINE_OWNERS = (cst.BaseStatement, cst.BaseSmallStatement, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                cst.Finally)


class Parsed:
    """A module parsed once, with the positions and parents of its nodes."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self.wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents: dict[int, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []   # every node, parents before children
        for node in walk(self.module):
            self.nodes.append(node)
            for child in children(node):
                self.parents[id(child)] = node

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        where = self.positions[node]
        return where.start.line, where.end.line


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children in source order, read from its fields (libcst's `children` runs a
    visitor per call, which made walking a large file dominate the harness's time)."""
    found = []
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, cst.CSTNode):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(item for item in value if isinstance(item, cst.CSTNode))
    return found


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything under it, parents before children, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


@dataclasses.dataclass
class _Edit:
    before: list[cst.CSTNode] = dataclasses.field(default_factory=list)
    replacement: list[cst.CSTNode] | None = None
    after: list[cst.CSTNode] = dataclasses.field(default_factory=list)


class Splice:
    """Planned edits over one parsed file; `render` builds the new tree and the line map.

    Nodes passed in replacements may be new or taken from the original tree (a move); the
    contents of a replacement are final (no planned edit is applied inside it).
    """

    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self._edits: dict[int, _Edit] = {}
        self._nodes: dict[int, cst.CSTNode] = {}
        self._pins: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.extra_files: dict[str, cst.Module] = {}

    def _edit(self, node: cst.CSTNode) -> _Edit:
        if self.parsed.parent(node) is None:
            raise ValueError("only nodes inside the module can be edited")
        self._nodes[id(node)] = node
        return self._edits.setdefault(id(node), _Edit())

    def replace(self, node: cst.CSTNode, nodes: list[cst.CSTNode]) -> None:
        edit = self._edit(node)
        if edit.replacement is not None:
            raise ValueError("a node is replaced twice")
        edit.replacement = list(nodes)

    def remove(self, node: cst.CSTNode) -> None:
        self.replace(node, [])

    def insert_before(self, node: cst.CSTNode, nodes: list[cst.CSTNode]) -> None:
        self._edit(node).before.extend(nodes)

    def insert_after(self, node: cst.CSTNode, nodes: list[cst.CSTNode]) -> None:
        edit = self._edit(node)
        edit.after[:0] = nodes

    def pin(self, old: cst.CSTNode, new: cst.CSTNode) -> None:
        """Map the lines of `old` (gone from the new tree) onto those of `new`."""
        self._pins.append((old, new))

    def add_file(self, path: str, module: cst.Module) -> None:
        self.extra_files[path] = module

    def render(self) -> tuple[dict[str, str], LineMap]:
        marked = self._ancestors_of_edits()
        rebuilt: dict[int, cst.CSTNode] = {}
        module = self._rebuild(self.parsed.module, marked, rebuilt)
        files = {self.parsed.path: module, **self.extra_files}
        rendered = {path: code_and_positions(tree) for path, tree in files.items()}
        texts = {path: code for path, (code, _) in rendered.items()}
        return texts, self._line_map({path: positions for path, (_, positions) in rendered.items()}, rebuilt)

    def _ancestors_of_edits(self) -> set[int]:
        marked: set[int] = set()
        for key in self._edits:
            for ancestor in self.parsed.ancestors(self._nodes[key]):
                if id(ancestor) in marked:
                    break
                marked.add(id(ancestor))
        return marked

    def _rebuild(self, node: cst.CSTNode, marked: set[int], rebuilt: dict[int, cst.CSTNode]) -> cst.CSTNode:
        changes = {}
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, cst.CSTNode):
                if id(value) in self._edits:
                    (replacement,) = self._expand(value, marked, rebuilt)
                    changes[field.name] = replacement
                elif id(value) in marked:
                    changes[field.name] = self._rebuild(value, marked, rebuilt)
            elif isinstance(value, (list, tuple)) and any(id(v) in self._edits or id(v) in marked for v in value
                                                          if isinstance(v, cst.CSTNode)):
                items: list = []
                for item in value:
                    if isinstance(item, cst.CSTNode) and (id(item) in self._edits or id(item) in marked):
                        items.extend(self._expand(item, marked, rebuilt))
                    else:
                        items.append(item)
                changes[field.name] = items
        new = node.with_changes(**changes) if changes else node
        rebuilt[id(node)] = new
        return new

    def _expand(self, node: cst.CSTNode, marked: set[int], rebuilt: dict[int, cst.CSTNode]) -> list[cst.CSTNode]:
        edit = self._edits.get(id(node))
        if edit is None:
            return [self._rebuild(node, marked, rebuilt)]
        if edit.replacement is not None:
            middle = edit.replacement
        elif id(node) in marked:
            middle = [self._rebuild(node, marked, rebuilt)]
        else:
            middle = [node]
        return edit.before + middle + edit.after

    def _line_map(self, files: dict[str, dict], rebuilt: dict[int, cst.CSTNode]) -> LineMap:
        where: dict[int, tuple[str, CodeRange]] = {}
        for path, positions in files.items():
            for node, code_range in positions.items():
                if isinstance(node, _LINE_OWNERS):
                    if id(node) in where:
                        raise ValueError("a node appears twice in the rewritten files")
                    where[id(node)] = (path, code_range)
        old_path = self.parsed.path
        mapping: LineMap = {}
        for node in self.parsed.nodes:
            if not isinstance(node, _LINE_OWNERS) or isinstance(node, cst.BaseSmallStatement):
                continue
            new = rebuilt.get(id(node), node)
            first, last = _owned_lines(node, self.parsed.positions)
            target = where.get(id(new))
            for line in range(first, last + 1):
                mapping[(old_path, line)] = _shift(target, line - first)
        for old, new in self._pins:
            first, last = self.parsed.lines(old)
            target = where.get(id(rebuilt.get(id(new), new)))
            for line in range(first, last + 1):
                mapping[(old_path, line)] = _shift(target, line - first)
        return mapping


def _owned_lines(node: cst.CSTNode, positions) -> tuple[int, int]:
    """The lines a node holds itself: all of a simple statement; a compound statement's or a
    clause's header (down to the end of its test, iterable, items or parameters), not its body
    nor the comments before its body's statements."""
    where = positions[node]
    if isinstance(node, cst.SimpleStatementLine):
        return where.start.line, where.end.line
    last = where.start.line
    for child in children(node):
        if isinstance(child, (cst.BaseSuite, cst.EmptyLine, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                              cst.Finally, cst.If)):
            continue
        if child in positions:
            last = max(last, positions[child].end.line)
    return where.start.line, last


def code_and_positions(module: cst.Module) -> tuple[str, dict[cst.CSTNode, CodeRange]]:
    """The module's text and its nodes' positions, from one code generation.

    `MetadataWrapper(...).resolve(PositionProvider)` generates the code once more than needed
    and walks the tree first; for the large training files the two passes dominated a rewrite.
    This drives libcst's own position-tracking code generation directly (a private API, kept
    to this one function).
    """
    provider = PositionProvider()
    state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                          default_newline=module.default_newline, provider=provider)
    module._codegen(state)
    return "".join(state.tokens), provider._computed


def _shift(target: tuple[str, CodeRange] | None, offset: int) -> tuple[str, int] | None:
    if target is None:
        return None
    path, code_range = target
    return path, min(code_range.start.line + offset, code_range.end.line)


def identity_map(path: str, source: str) -> LineMap:
    """The map of a rewrite that keeps every line where it was (a renaming)."""
    return {(path, line): (path, line) for line in range(1, source.count("\n") + 2)}
