"""Walk hooks for the blocks a walker enters and leaves, and blocks marked for a reason.

A compound statement's body is an indented block or a one-line suite (`if x: y`); a walker that
keeps state per block (a guard's body, a CPU fallback, a first-iteration branch) mixes in
`SuiteVisits` and defines `open_suite` / `close_suite` (not `visit_`/`leave_` names, which the
engine reads as hooks), instead of the four hooks each.
`MarkedSuites` holds the bodies an `if` marked when it was visited and how many of them the walk
is inside.
"""

from __future__ import annotations

import libcst as cst


class SuiteVisits:
    """Calls `open_suite(body)` and `close_suite(body)` for every indented or one-line body."""

    def open_suite(self, body: cst.BaseSuite) -> None:
        raise NotImplementedError

    def close_suite(self, body: cst.BaseSuite) -> None:
        raise NotImplementedError

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.open_suite(node)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.close_suite(node)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.open_suite(node)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.close_suite(node)


class MarkedSuites:
    """Bodies marked before the walk reaches them; `depth` counts the marked ones it is inside."""

    def __init__(self) -> None:
        self._marked: set[int] = set()
        self.depth = 0

    def mark(self, body: cst.BaseSuite) -> None:
        self._marked.add(id(body))

    def enter(self, body: cst.BaseSuite) -> bool:
        """Whether `body` is marked (then the walk is one marked body deeper)."""
        if id(body) not in self._marked:
            return False
        self.depth += 1
        return True

    def leave(self, body: cst.BaseSuite) -> bool:
        """Whether `body` was marked (then it is forgotten, and the walk one marked body shallower)."""
        if id(body) not in self._marked:
            return False
        self._marked.discard(id(body))
        self.depth -= 1
        return True
