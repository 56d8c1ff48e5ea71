"""Refactoring invariance on real code (issue 23, item 2): rewrites of probed real training loops
that keep behaviour must keep verify-perf's findings, and the two that change how often the
probes run must change their findings as stated.

Slow (about twenty minutes on two cores): `pytest -m slow tests/realcode/test_invariance.py`.
Needs the pinned repositories as git mirrors under $REALCODE_MIRRORS (default `../.mirror`
beside the checkout); loops whose repository has no mirror are left out, and the test is skipped
when none has one. verify-perf runs as `python -m verifier` from the checkout, or as
$REALCODE_VERIFIER_CMD (a fixed build, say). The rate is printed whether or not the bar is met
(INVARIANCE.md says where the analyzer stands).
"""

from __future__ import annotations

import pytest

from tests.realcode.harness_run import run_harness
from tests.realcode.invariance.report import INVARIANCE_BAR

pytestmark = pytest.mark.slow


def test_behaviour_preserving_rewrites_keep_the_findings(tmp_path):
    summary = run_harness("tests.realcode.invariance", tmp_path / "invariance.json")
    assert summary["pairs"] > 0
    print(f"invariance {summary['invariant']}/{summary['pairs']} = {summary['invariance']:.3f}; behaviour-changing "
          f"probes as stated {summary['changing_probes_as_stated']}/{summary['changing_probes_judged']}")
    assert summary["changing_probes_as_stated"] == summary["changing_probes_judged"], \
        "a behaviour-changing rewrite left a probe's finding as it was"
    assert summary["invariance"] >= INVARIANCE_BAR, \
        f"invariance {summary['invariance']:.3f} is below the bar {INVARIANCE_BAR}"
