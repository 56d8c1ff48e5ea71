"""Cached runs equal cold runs on real code through random edit sequences (issue "Incremental
project analysis": identity with a cold run). Slow: `pytest -m slow
tests/realcode/test_cache_identity_realcode.py -s`. Needs the pinned repositories as git mirrors
under $REALCODE_MIRRORS (default `../.mirror` beside the checkout); skipped when none is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def test_cached_runs_equal_cold_runs_on_edited_real_code(tmp_path):
    mirrors = Path(os.environ.get("REALCODE_MIRRORS") or ROOT.parent / ".mirror")
    if not (mirrors / "karpathy+nanoGPT").is_dir():
        pytest.skip(f"no mirror of the judged repositories under {mirrors}")
    report = tmp_path / "identity.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "cache_identity.py"), "--mirrors", str(mirrors), "--edits", "6",
         "--json-report", str(report),
         "--verifier-cmd", os.environ.get("REALCODE_VERIFIER_CMD") or f"{sys.executable} -m verifier"],
        capture_output=True, text=True, timeout=7200,
    )
    print(done.stdout[-8000:])
    results = json.loads(report.read_text())
    assert results, "no repository was compared"
    assert sum(len(r["edits"]) for r in results) >= 6
    assert [d for r in results for d in r["differences"]] == []
    assert done.returncode == 0, done.stderr[-4000:]
