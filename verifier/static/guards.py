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
    ifs: list[bool] = field(default_factory=list)
    loops: list[bool] = field(default_factory=list)


class GuardTracker:
    def __init__(self, imports: ImportTable) -> None:
        self._imports = imports
        self._frames: list[_Frame] = [_Frame()]
        # `orelse` node id -> index of its guard in the `ifs` stack of the current frame.
        self._else_of_guard: dict[int, int] = {}

    def enter_function(self) -> None:
        self._frames.append(_Frame())

    def leave_function(self) -> None:
        self._frames.pop()

    def enter_loop(self) -> None:
        self._frames[-1].loops.append(False)

    def leave_loop(self) -> None:
        self._frames[-1].loops.pop()

    def enter_if(self, node: cst.If) -> None:
        self.enter_else(node)
        frame = self._frames[-1]
        guard = is_rate_limit(node.test, self._imports)
        frame.ifs.append(guard)
        if guard and node.orelse is not None:
            self._else_of_guard[id(node.orelse)] = len(frame.ifs) - 1

    def enter_else(self, node: cst.CSTNode) -> None:
        index = self._else_of_guard.pop(id(node), None)
        if index is not None:
            self._frames[-1].ifs[index] = False

    def leave_if(self, node: cst.If) -> None:
        frame = self._frames[-1]
        guard = frame.ifs.pop()
        if guard and frame.loops and node.orelse is None and _leaves_iteration(node.body):
            frame.loops[-1] = True

    @property
    def guarded(self) -> bool:
        frame = self._frames[-1]
        return any(frame.ifs) or any(frame.loops)


class GuardedRule(Rule):
    """A rule that stays quiet under rate-limit guards: `self.guarded` says whether the node
    being visited runs only every N steps. Subclasses overriding these hooks call super()."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._guards = GuardTracker(context.imports)

    @property
    def guarded(self) -> bool:
        return self._guards.guarded

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guards.enter_function()

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._guards.leave_function()

    def visit_For(self, node: cst.For) -> None:
        self._guards.enter_loop()

    def leave_For(self, node: cst.For) -> None:
        self._guards.leave_loop()

    def visit_While(self, node: cst.While) -> None:
        self._guards.enter_loop()

    def leave_While(self, node: cst.While) -> None:
        self._guards.leave_loop()

    def visit_If(self, node: cst.If) -> None:
        self._guards.enter_if(node)

    def leave_If(self, node: cst.If) -> None:
        self._guards.leave_if(node)

    def visit_Else(self, node: cst.Else) -> None:
        self._guards.enter_else(node)
