"""`--fix` on real code (issue "Fixes, not just findings"): every fix any rule offers (preview and
unsafe ones included) applied to the judged repositories leaves every file compiling, removes
exactly the fixed findings, and a second `--fix` changes nothing.

Slow (every repository analysed four times): `pytest -m slow tests/realcode/test_fix_realcode.py -s`.
Needs the pinned repositories as git mirrors under $REALCODE_MIRRORS (default `../.mirror` beside
the checkout); repositories without one are left out, and the test is skipped when none has one.
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


def test_every_offered_fix_applies_cleanly_to_real_code(tmp_path):
    mirrors = Path(os.environ.get("REALCODE_MIRRORS") or ROOT.parent / ".mirror")
    repos = json.loads((HERE / "verdicts.json").read_text())["repos"]
    if not any((mirrors / r["mirror"]).is_dir() for r in repos):
        pytest.skip(f"no mirror of the judged repositories under {mirrors}")
    report = tmp_path / "fix.json"
    done = subprocess.run(
        [sys.executable, str(HERE / "fix_realcode.py"), "--mirrors", str(mirrors), "--json-report", str(report),
         "--verifier-cmd", os.environ.get("REALCODE_VERIFIER_CMD") or f"{sys.executable} -m verifier"],
        capture_output=True, text=True, timeout=7200,
    )
    print(done.stdout[-20000:])
    total = json.loads(report.read_text())["total"]
    assert total["fixed"] > 0, "no fix was offered anywhere: the harness measured nothing"
    assert (total["not_compiling"], total["unexpected"], total["not_idempotent"], total["still_fixable"]) == (0, 0, 0, 0)
    assert done.returncode == 0, done.stderr[-4000:]
