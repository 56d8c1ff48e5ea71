"""Running a real-code harness (`tests.realcode.inject`, `tests.realcode.invariance`) from a slow
test: on the training loops whose repository has a mirror, with the verifier of
$REALCODE_VERIFIER_CMD (default: this checkout's), returning the JSON summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realcode.inject.targets import TARGETS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def mirrors() -> Path:
    return Path(os.environ.get("REALCODE_MIRRORS") or ROOT.parent / ".mirror")


def repositories_present() -> list[str]:
    """The repositories of the training-loop table that have a mirror."""
    folder = mirrors()
    repos = {r["name"]: r["mirror"] for r in json.loads((HERE / "verdicts.json").read_text())["repos"]}
    return sorted({t.repo for t in TARGETS if (folder / repos[t.repo]).is_dir()})


def run_harness(module: str, report: Path) -> dict:
    """Run `python -m module` over the repositories present (skipping the test when there are
    none), print its table, and return the summary of its JSON report."""
    names = repositories_present()
    if not names:
        pytest.skip(f"no mirror of the training loops under {mirrors()}")
    argv = [sys.executable, "-m", module, "--mirrors", str(mirrors()),
            "--verifier-cmd", os.environ.get("REALCODE_VERIFIER_CMD") or f"{sys.executable} -m verifier",
            "--json-report", str(report)]
    for name in names:
        argv += ["--repo", name]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False)
    print(done.stdout[-30000:])
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(report.read_text())["summary"]
