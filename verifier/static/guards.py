"""Rate-limit guards: code under `if step % log_every == 0:` runs every N steps, not every step.

A guard is an enclosing `if` (in the same function) whose test takes a modulo, compares a
step/batch index for equality (`if i == 0`, `if batch_idx == len(loader) - 1`), reads a clock,
or names a logging decision (`if should_log:`, `if step_is_print_step`). The `else` branch of
a guard is not guarded. `if step % N: continue` guards the rest of its loop body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from verifier.static.names import ImportTable, dotted_name, terminal_name
from verifier.static.rule import Rule
from verifier.static.tracker import Tracker
from verifier.static.walk import iter_descendants

# `should_log`, `log_interval`, `print_freq`; not `logger` (a null check is no rate limit).
_LOGGING_DECISION = re.compile(
    r"every|interval|freq|period|should_log|log_now|do_log|is_log|log_step|print_step|display", re.IGNORECASE
)
_INDEX = re.compile(r"^(i|j|k|n|it|idx)$|step|iter|batch|idx|count", re.IGNORECASE)


def is_rate_limit(test: cst.BaseExpression, imports: ImportTable) -> bool:
    for node in (test, *iter_descendants(test)):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return True
        if isinstance(node, cst.Comparison) and _compares_index_for_equality(node):
            return True
        if isinstance(node, (cst.Name, cst.Attribute)) and _LOGGING_DECISION.search(terminal_name(node) or ""):
            return True
        if isinstance(node, cst.Call) and (imports.call_name(node) or "").startswith("time."):
            return True
    return False


def guarded_calls(node: cst.If, imports: ImportTable) -> frozenset[int]:
    """Ids of the calls that run only when a rate-limit `if` holds (its body, not its `else`)."""
    if not is_rate_limit(node.test, imports):
        return frozenset()
    return frozenset(id(n) for n in iter_descendants(node.body) if isinstance(n, cst.Call))


def _compares_index_for_equality(node: cst.Comparison) -> bool:
    if not any(isinstance(c.operator, cst.Equal) for c in node.comparisons):
        return False
    sides = [node.left, *(c.comparator for c in node.comparisons)]
    return any(_INDEX.search(dotted_name(side) or "") for side in sides)


def _leaves_iteration(body: cst.BaseSuite) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    last = statements[-1] if statements else None
    small = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return any(isinstance(s, cst.Continue) for s in small)


@dataclass(eq=False)
class _Frame:
    guarded_bodies: int = 0
    loops: list[bool] = field(default_factory=list)


class Guards(Tracker):
    """Whether the node being visited runs only every N steps: inside the body of a rate-limit
    `if` of the same function, or after `if step % N: continue` in its loop. The test of the
    `if` itself, and its `else`, run every time."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frames: list[_Frame] = [_Frame()]
        self._guarded_bodies: set[int] = set()

    @property
    def guarded(self) -> bool:
        frame = self._frames[-1]
        return frame.guarded_bodies > 0 or any(frame.loops)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.append(_Frame())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    def visit_For(self, node: cst.For) -> None:
        self._frames[-1].loops.append(False)

    def leave_For(self, node: cst.For) -> None:
        self._frames[-1].loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self._frames[-1].loops.append(False)

    def leave_While(self, node: cst.While) -> None:
        self._frames[-1].loops.pop()

    def visit_If(self, node: cst.If) -> None:
        if is_rate_limit(node.test, self.context.imports):
            self._guarded_bodies.add(id(node.body))

    def leave_If(self, node: cst.If) -> None:
        frame = self._frames[-1]
        if id(node.body) in self._guarded_bodies:
            self._guarded_bodies.discard(id(node.body))
            if frame.loops and node.orelse is None and _leaves_iteration(node.body):
                frame.loops[-1] = True

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._enter_body(node, 1)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._enter_body(node, -1)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._enter_body(node, 1)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._enter_body(node, -1)

    def _enter_body(self, body: cst.BaseSuite, step: int) -> None:
        if id(body) in self._guarded_bodies:
            self._frames[-1].guarded_bodies += step


class GuardedRule(Rule):
    """A rule that stays quiet under rate-limit guards: `self.guarded` says whether the node
    being visited runs only every N steps."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._guards = context.tracker(Guards)

    @property
    def guarded(self) -> bool:
        return self._guards.guarded
