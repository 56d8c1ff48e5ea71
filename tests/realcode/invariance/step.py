"""The training step of a probed file, as libcst nodes: the anchor (the backward or optimizer
step after which the probes were written), the probe statements, the loops around them, the
function and class that hold them, and the statement that makes the loss.

Every rewrite starts from this one description, so all of them agree on what "the loop", "the
loss" and "the probe" are. It is read from the syntax alone, like the injection finder.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import GlobalScope, Scope, ScopeProvider

from tests.realcode.inject.finder import dotted_name
from tests.realcode.invariance.splice import Parsed, children

LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass
class Step:
    parsed: Parsed
    subject: str                       # the loss the probes read, as written: `loss`, `self.loss`
    probes: list[cst.SimpleStatementLine]
    block: cst.IndentedBlock           # the block holding the anchor and the probes
    anchor: cst.BaseStatement
    loops: list[cst.For | cst.While]   # innermost first, up to the function (or module)
    function: cst.FunctionDef | None
    klass: cst.ClassDef | None         # the class whose method `function` is
    top: cst.BaseStatement             # the module-level statement holding the step
    scope: Scope                       # the scope whose names the step reads and writes

    @property
    def inner_loop(self) -> cst.For | cst.While:
        return self.loops[0]

    @property
    def outer_loop(self) -> cst.For | cst.While:
        return self.loops[-1]

    @property
    def module(self) -> cst.Module:
        return self.parsed.module

    @property
    def is_module_level(self) -> bool:
        return isinstance(self.scope, GlobalScope)

    @property
    def self_name(self) -> str | None:
        if self.klass is None or not self.function.params.params:
            return None
        return self.function.params.params[0].name.value

    def index(self, statement: cst.BaseStatement) -> int:
        return next(i for i, s in enumerate(self.block.body) if s is statement)

    def probe_span(self) -> tuple[int, int]:
        """Indexes in the block of the first and last probe statement."""
        return self.index(self.probes[0]), self.index(self.probes[-1])


def statements_by_line(parsed: Parsed) -> dict[int, cst.BaseStatement]:
    found: dict[int, cst.BaseStatement] = {}
    for node, where in parsed.positions.items():
        if isinstance(node, cst.SimpleStatementLine):
            found.setdefault(where.start.line, node)
    return found


def locate(parsed: Parsed, probe_lines: list[int], subject: str) -> Step:
    """The step around the probe statements starting on `probe_lines` (those right after the anchor)."""
    by_line = statements_by_line(parsed)
    probes = [by_line[line] for line in sorted(set(probe_lines))]
    block = parsed.parent(probes[0])
    if not isinstance(block, cst.IndentedBlock) or any(parsed.parent(p) is not block for p in probes):
        raise LookupError("the probes are not statements of one block")
    first = next(i for i, s in enumerate(block.body) if s is probes[0])
    if first == 0:
        raise LookupError("no anchor statement before the probes")
    loops: list[cst.For | cst.While] = []
    function = klass = None
    top = probes[0]
    for ancestor in parsed.ancestors(probes[0]):
        if isinstance(ancestor, SCOPES) and function is None and not isinstance(ancestor, cst.FunctionDef):
            raise LookupError("the step is inside a class body or a lambda")
        if isinstance(ancestor, cst.FunctionDef) and function is None:
            function = ancestor
            owner = parsed.parent(parsed.parent(ancestor))
            klass = owner if isinstance(owner, cst.ClassDef) else None
        if isinstance(ancestor, LOOPS) and function is None:
            loops.append(ancestor)
        if isinstance(ancestor, cst.Module):
            break
        top = ancestor
    if not loops:
        raise LookupError("the probes are not in a loop")
    scopes = parsed.wrapper.resolve(ScopeProvider)
    scope = scopes[probes[0].body[0]]
    return Step(parsed, subject, probes, block, block.body[first - 1], loops, function, klass, top, scope)


def statement_nodes(node: cst.CSTNode) -> list[cst.BaseStatement]:
    """Every statement inside `node` (itself included), nested functions and classes too."""
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BaseStatement):
            found.append(current)
        stack.extend(children(current))
    return found


def _reads_name(node: cst.CSTNode, dotted: str) -> bool:
    return any(dotted_name(n) == dotted for n in _expressions(node))


def _expressions(node: cst.CSTNode):
    """Names and attribute chains read in `node` (not the `b` of `a.b` on its own)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Name, cst.Attribute)):
            yield current
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(children(current))


def target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names and attributes an assignment target binds (tuple and list targets unpacked)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        found = []
        for element in target.elements:
            found += target_names(element.value)
        return found
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return [target]


def loss_statement(step: Step) -> cst.SimpleStatementLine | None:
    """The statement that makes the loss: the last single assignment before the anchor, in the
    step's loops, that binds the subject without reading it (`loss = loss / n` rescales)."""
    anchor_line = step.parsed.lines(step.anchor)[0]
    best = None
    for statement in statement_nodes(step.outer_loop):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        line = step.parsed.lines(statement)[0]
        if line >= anchor_line or _inside_nested_scope(step, statement):
            continue
        bound = [dotted_name(t) for t in target_names(small.targets[0].target)]
        later = best is None or line > step.parsed.lines(best)[0]
        if step.subject in bound and not _reads_name(small.value, step.subject) and later:
            best = statement
    return best


def _inside_nested_scope(step: Step, node: cst.CSTNode) -> bool:
    for ancestor in step.parsed.ancestors(node):
        if ancestor is step.outer_loop:
            return False
        if isinstance(ancestor, SCOPES):
            return True
    return False
