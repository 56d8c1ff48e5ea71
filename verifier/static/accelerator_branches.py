"""Branches that run only where no CUDA device is present: the `else` of `if
torch.cuda.is_available():` (or of `if x.is_cuda:`), and the body of `if not
torch.cuda.is_available():`. A script's CPU fallback there wraps, moves and reads nothing on an
accelerator, whatever the same lines would cost on one.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.suites import MarkedSuites, SuiteVisits
from verifier.static.tracker import Tracker

_AVAILABILITY_PROBES = frozenset({"torch.cuda.is_available"})


class AcceleratorBranches(SuiteVisits, Tracker):
    """Whether the node being visited is in a branch that runs only without a CUDA device."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._host_bodies = MarkedSuites()

    @property
    def host_only(self) -> bool:
        return self._host_bodies.depth > 0

    def visit_If(self, node: cst.If) -> None:
        available = self._probes_cuda(node.test)
        if available is True and type(node.orelse) is cst.Else:
            self._host_bodies.mark(node.orelse.body)
        elif available is False:
            self._host_bodies.mark(node.body)

    def open_suite(self, body: cst.BaseSuite) -> None:
        self._host_bodies.enter(body)

    def close_suite(self, body: cst.BaseSuite) -> None:
        self._host_bodies.leave(body)

    def _probes_cuda(self, test: cst.BaseExpression) -> bool | None:
        """True for a test that holds where CUDA is present, False for its negation, else None."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self._probes_cuda(test.expression)
            return None if inner is None else not inner
        if type(test) is cst.Call and not test.args:
            return True if (self.context.imports.call_name(test) or "") in _AVAILABILITY_PROBES else None
        if type(test) is cst.Attribute and test.attr.value == "is_cuda":
            return True
        return None
