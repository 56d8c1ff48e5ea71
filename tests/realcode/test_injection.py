"""Injection recall on real code (issue 23): per-step costs inserted after the backward of real
training loops, through every path kind, must be found at step heat.

Slow (about a quarter of an hour on two cores): `pytest -m slow tests/realcode/test_injection.py`.
Needs the pinned repositories as git mirrors under $REALCODE_MIRRORS (default `../.mirror`
beside the checkout); training loops whose repository has no mirror are left out, and the test
is skipped when none has one. The bars are the issue's acceptance figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realcode.inject.report import OVERALL_BAR, PATH_KIND_BAR
from tests.realcode.inject.targets import TARGETS

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _mirrors() -> Path:
    return Path(os.environ.get("REALCODE_MIRRORS") or ROOT.parent / ".mirror")


def _present() -> list[str]:
    mirrors = _mirrors()
    repos = {r["name"]: r["mirror"] for r in json.loads((HERE / "verdicts.json").read_text())["repos"]}
    return sorted({t.repo for t in TARGETS if (mirrors / repos[t.repo]).is_dir()})


def test_injected_per_step_costs_are_found(tmp_path):
    names = _present()
    if not names:
        pytest.skip(f"no mirror of the injection targets under {_mirrors()}")
    report = tmp_path / "inject.json"
    argv = [sys.executable, "-m", "tests.realcode.inject", "--mirrors", str(_mirrors()),
            "--verifier-cmd", f"{sys.executable} -m verifier", "--json-report", str(report)]
    for name in names:
        argv += ["--repo", name]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    print(done.stdout[-30000:])
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(report.read_text())["summary"]
    assert summary["recall"] >= OVERALL_BAR
    below = {kind: row["recall"] for kind, row in summary["by_kind"].items() if row["recall"] < PATH_KIND_BAR}
    assert not below, f"path kinds below {PATH_KIND_BAR}: {below}"
