"""Find training loops and the statement after which a probe goes, without asking verify-perf.

A training loop is a `for`/`while` loop whose own body (not a nested loop, function or class;
`with`, `if` and `try` blocks are looked through) calls a backward: `X.backward()`,
`scaler.scale(X).backward()`, `accelerator.backward(X)`, `fabric.backward(X)`,
`self.manual_backward(X)`. The harness must not learn where loops are from the tool it
measures, so this module answers from the syntax alone; the curated table in `targets.py`
only picks among its answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
_LOOPS = (cst.For, cst.While)
_OPAQUE = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class InsertionPoint:
    """One statement in a training loop's body after which probes are inserted.

    Lines are 1-based lines of the original file; `indent` is the statement's leading
    whitespace as written; `subject` is the loss expression the probes read (a dotted name),
    or None when the backward's argument is not one.
    """

    path: str
    statement_line: int
    statement_end_line: int
    indent: str
    subject: str | None
    loop_line: int
    outer_loop_line: int
    outer_loop_indent: str
    block_end_line: int
    indent_unit: str
    function: str | None
    function_line: int | None
    function_is_method: bool
    self_name: str | None
    class_name: str | None
    class_line: int | None
    class_end_line: int | None
    class_body_indent: str | None
    init_end_line: int | None
    init_body_indent: str | None
    top_level_line: int


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of plain attribute accesses on a name, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def backward_subject(call: cst.Call) -> tuple[bool, str | None]:
    """(is this a backward call, the loss it differentiates as a dotted name or None)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _BACKWARD_METHODS:
        return False, None
    positional = [a for a in call.args if a.keyword is None and a.star == ""]
    if func.attr.value == "manual_backward" or positional:
        # accelerator.backward(loss), fabric.backward(loss), self.manual_backward(loss)
        return True, dotted_name(positional[0].value) if positional else None
    receiver = func.value
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
        # scaler.scale(loss).backward()
        args = [a for a in receiver.args if a.keyword is None]
        return True, dotted_name(args[0].value) if len(args) == 1 else None
    return True, dotted_name(receiver)


def statement_call(statement: cst.CSTNode) -> cst.Call | None:
    """The call a simple statement line consists of (`f(x)` as an expression statement)."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return small.value
    return None


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        self.points: list[InsertionPoint] = []
        self.statements: dict[int, InsertionPoint] = {}
        self.step_lines: set[int] = set()
        self._scopes: list[cst.CSTNode] = []
        self._loops: list[cst.CSTNode] = []
        self._blocks: list[cst.BaseSuite] = []
        self._top: cst.CSTNode | None = None
        self._default_indent = "    "

    def _pos(self, node: cst.CSTNode):
        return self.get_metadata(PositionProvider, node)

    def _first_line(self, node: cst.CSTNode) -> int:
        decorators = getattr(node, "decorators", ())
        return min([self._pos(node).start.line] + [self._pos(d).start.line for d in decorators])

    def _indent_of(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[: len(text) - len(text.lstrip())]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            self._default_indent = node.default_indent
        if self._top is None and isinstance(node, cst.BaseStatement):
            self._top = node
        if isinstance(node, _OPAQUE):
            self._scopes.append(node)
            self._loops.append(None)
        elif isinstance(node, _LOOPS):
            self._loops.append(node)
        elif isinstance(node, cst.IndentedBlock):
            self._blocks.append(node)
        elif isinstance(node, cst.SimpleStatementLine):
            self._statement(node)
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, _OPAQUE):
            self._scopes.pop()
            self._loops.pop()
        elif isinstance(node, _LOOPS):
            self._loops.pop()
        elif isinstance(node, cst.IndentedBlock):
            self._blocks.pop()
        if node is self._top:
            self._top = None

    def _statement(self, node: cst.SimpleStatementLine) -> None:
        if not self._loops or self._loops[-1] is None:
            return
        pos = self._pos(node)
        call = statement_call(node)
        is_backward, subject = backward_subject(call) if call is not None else (False, None)
        self.statements[pos.start.line] = self._context(node, subject)
        if call is not None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "step":
            self.step_lines.add(pos.start.line)
        if is_backward:
            self.points.append(self.statements[pos.start.line])

    def _context(self, node: cst.SimpleStatementLine, subject: str | None) -> InsertionPoint:
        pos = self._pos(node)
        loop = self._loops[-1]
        # The outermost loop of the same function: set-up code goes before it, so it runs once.
        scope_start = max((i for i, entry in enumerate(self._loops) if entry is None), default=-1) + 1
        outer = self._loops[scope_start]
        function = next((s for s in reversed(self._scopes) if isinstance(s, cst.FunctionDef)), None)
        klass = None
        if function is not None:
            owner_index = self._scopes.index(function) - 1
            if owner_index >= 0 and isinstance(self._scopes[owner_index], cst.ClassDef):
                klass = self._scopes[owner_index]
        init = None
        if klass is not None:
            init = next((s for s in klass.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        return InsertionPoint(
            path=self.path,
            statement_line=pos.start.line,
            statement_end_line=pos.end.line,
            indent=self._indent_of(pos.start.line),
            subject=subject,
            loop_line=self._pos(loop).start.line,
            outer_loop_line=self._pos(outer).start.line,
            outer_loop_indent=self._indent_of(self._pos(outer).start.line),
            block_end_line=self._pos(self._blocks[-1]).end.line,
            indent_unit=self._blocks[-1].indent or self._default_indent,
            function=_qualified(self._scopes, function),
            function_line=self._first_line(function) if function is not None else None,
            function_is_method=klass is not None,
            self_name=function.params.params[0].name.value if klass is not None and function.params.params else None,
            class_name=klass.name.value if klass is not None else None,
            class_line=self._first_line(klass) if klass is not None else None,
            class_end_line=self._pos(klass).end.line if klass is not None else None,
            class_body_indent=self._indent_of(self._pos(klass.body.body[0]).start.line) if klass is not None else None,
            init_end_line=self._pos(init).end.line if init is not None else None,
            init_body_indent=self._indent_of(self._pos(init.body.body[0]).start.line)
            if init is not None and isinstance(init.body, cst.IndentedBlock) else None,
            top_level_line=self._first_line(self._top),
        )


def _qualified(scopes: list[cst.CSTNode], function: cst.FunctionDef | None) -> str | None:
    if function is None:
        return None
    names = [s.name.value for s in scopes[: scopes.index(function) + 1] if not isinstance(s, cst.Lambda)]
    return ".".join(names)


def _collect(source: str, path: str) -> _Collector:
    collector = _Collector(path, source.splitlines())
    MetadataWrapper(cst.parse_module(source)).visit(collector)
    return collector


def find_training_loops(source: str, path: str = "") -> list[InsertionPoint]:
    """Every backward statement directly in a loop's body, in file order."""
    return _collect(source, path).points


def insertion_point_at(source: str, line: int, path: str = "", subject: str | None = None) -> InsertionPoint:
    """The loop statement starting at `line`, for a table entry that names it.

    A backward there gives its own subject; any other statement (a local `_backward(loss)`
    helper, say) needs the subject from the table.
    """
    collector = _collect(source, path)
    if line not in collector.statements:
        raise LookupError(f"{path}:{line}: no simple statement inside a loop starts on this line")
    point = collector.statements[line]
    if subject is not None:
        point = replace(point, subject=subject)
    if point.subject is None:
        raise LookupError(f"{path}:{line}: the statement's loss is not a plain name; name the subject in the table")
    return point



def optimizer_step_after(source: str, backward: InsertionPoint) -> InsertionPoint | None:
    """The first `X.step(...)` statement after the backward in the same loop nest (an optimizer's
    or a scaler's step), with the backward's subject; None when the loop has none.

    A second anchor per loop: probes there run once per update, not per micro-batch.
    """
    collector = _collect(source, backward.path)
    for line in sorted(collector.step_lines):
        point = collector.statements[line]
        if (line > backward.statement_end_line and point.function_line == backward.function_line
                and point.outer_loop_line == backward.outer_loop_line):
            return replace(point, subject=backward.subject)
    return None
