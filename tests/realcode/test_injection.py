"""Injection recall on real code (issue 23): per-step costs inserted after the backward of real
training loops, through every path kind, must be found at step heat.

Slow (about a quarter of an hour on two cores): `pytest -m slow tests/realcode/test_injection.py`.
Needs the pinned repositories as git mirrors under $REALCODE_MIRRORS (default `../.mirror`
beside the checkout); training loops whose repository has no mirror are left out, and the test
is skipped when none has one. The bars are the issue's acceptance figures.
"""

from __future__ import annotations

import pytest

from tests.realcode.harness_run import run_harness
from tests.realcode.inject.report import OVERALL_BAR, PATH_KIND_BAR

pytestmark = pytest.mark.slow


def test_injected_per_step_costs_are_found(tmp_path):
    summary = run_harness("tests.realcode.inject", tmp_path / "inject.json")
    assert summary["recall"] >= OVERALL_BAR
    below = {kind: row["recall"] for kind, row in summary["by_kind"].items() if row["recall"] < PATH_KIND_BAR}
    assert not below, f"path kinds below {PATH_KIND_BAR}: {below}"
