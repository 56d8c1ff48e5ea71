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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realcode.inject.targets import TARGETS
from tests.realcode.invariance.report import INVARIANCE_BAR

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _mirrors() -> Path:
    return Path(os.environ.get("REALCODE_MIRRORS") or ROOT.parent / ".mirror")


def _present() -> list[str]:
    mirrors = _mirrors()
    repos = {r["name"]: r["mirror"] for r in json.loads((HERE / "verdicts.json").read_text())["repos"]}
    return sorted({t.repo for t in TARGETS if (mirrors / repos[t.repo]).is_dir()})


def test_behaviour_preserving_rewrites_keep_the_findings(tmp_path):
    names = _present()
    if not names:
        pytest.skip(f"no mirror of the training loops under {_mirrors()}")
    report = tmp_path / "invariance.json"
    argv = [sys.executable, "-m", "tests.realcode.invariance", "--mirrors", str(_mirrors()),
            "--verifier-cmd", os.environ.get("REALCODE_VERIFIER_CMD") or f"{sys.executable} -m verifier",
            "--json-report", str(report)]
    for name in names:
        argv += ["--repo", name]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    print(done.stdout[-30000:])
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(report.read_text())["summary"]
    assert summary["pairs"] > 0
    print(f"invariance {summary['invariant']}/{summary['pairs']} = {summary['invariance']:.3f}; behaviour-changing "
          f"probes as stated {summary['changing_probes_as_stated']}/{summary['changing_probes_judged']}")
    assert summary["changing_probes_as_stated"] == summary["changing_probes_judged"], \
        "a behaviour-changing rewrite left a probe's finding as it was"
    assert summary["invariance"] >= INVARIANCE_BAR, \
        f"invariance {summary['invariance']:.3f} is below the bar {INVARIANCE_BAR}"
