"""Failures fail: an entry that cannot load, raises in every mode or exits, and a crashing
harness give exit 2 and a written report that says what happened (issue 12, item 2)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from verifier.check import CALIBRATION_ONLY
from verifier.cli import main
from verifier.dynamic.harness import HarnessOptions, run_harness
from verifier.dynamic.verdicts import ACTIVATIONS_BASIS

pytestmark = pytest.mark.usefixtures("one_thread")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FIXTURE = Path(__file__).parent / "fixtures" / "entry_points.py"


def line_of(text: str) -> int:
    """The number of the fixture line that reads exactly `text`, indent included."""
    return FIXTURE.read_text().splitlines().index(text) + 1


FAST = ["--device", "cpu", "--warmup", "1", "--steps", "1", "--repeats", "2", "--max-repeats", "2", "--sync-steps", "1", "--accuracy-steps", "3", "--accuracy-seeds", "2", "--time-budget", "300"]


@pytest.fixture
def project(tmp_path, monkeypatch, entry_fixtures):
    shutil.copy(EXAMPLES / "good_train.py", tmp_path / "good_train.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("nosuchmod:f", "entry not found: cannot import 'nosuchmod' (No module named 'nosuchmod')"),
        ("entry_points:raises_on_call",
         "every mode failed: fp32: setup raised ValueError: no dataset at /data/train (at entry_points.py:{    raise ValueError(\"no dataset at /data/train\")}); "
         "bf16: setup raised ValueError: no dataset at /data/train (at entry_points.py:{    raise ValueError(\"no dataset at /data/train\")})"),
        ("entry_points:exits_on_call",
         "every mode failed: fp32: setup raised SystemExit: 0 (at entry_points.py:{    raise SystemExit(0)}); "
         "bf16: setup raised SystemExit: 0 (at entry_points.py:{    raise SystemExit(0)})"),
        ("entry_points:step_exits",
         "every mode failed: fp32: warm-up raised SystemExit: 0 (at entry_points.py:{        raise SystemExit(0)}); "
         "bf16: warm-up raised SystemExit: 0 (at entry_points.py:{        raise SystemExit(0)})"),
    ],
)
def test_a_failing_entry_exits_2_and_the_report_says_why(project, capsys, entry, said):
    said = re.sub(r"\{(.*?)\}(?=\))", lambda m: str(line_of(m.group(1))), said)
    code = main(["good_train.py", "--dynamic", "--entry", entry, "--task", "T1", *FAST])
    assert code == 2
    assert f"verify-perf: dynamic harness failed: {said}" in capsys.readouterr().err.splitlines()
    report = (project / "reports" / "T1.md").read_text()
    assert f"**Measured figures:** your entry point `{entry}`, which failed: {said}" in report
    assert f"| Dynamic harness | no figures | not measured: {said}" in report


def test_bench_with_a_missing_entry_exits_2(project, capsys):
    assert main(["bench", "--entry", "nosuchmod:f", *FAST]) == 2
    assert capsys.readouterr().err == (
        "verify-perf bench: error: entry not found: cannot import 'nosuchmod' (No module named 'nosuchmod')\n"
    )


def test_bench_exits_2_when_the_harness_crashes(project, capsys, monkeypatch):
    def crash(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("verifier.dynamic.command.run_harness", crash)
    assert main(["bench", "--entry", "entry_points:components", *FAST]) == 2
    assert capsys.readouterr().err == "verify-perf bench: error: the harness crashed: RuntimeError: boom\n"


def test_an_entry_that_exits_cannot_end_the_run():
    result = run_harness(HarnessOptions(entry="entry_points:step_exits", device="cpu", modes=("fp32",), warmup=1, steps=1, repeats=1, sync_steps=1))
    assert result.modes[0].error == f"warm-up raised SystemExit: 0 (at entry_points.py:{line_of('        raise SystemExit(0)')})"


def test_examples_score_the_same_with_a_calibration_run(tmp_path, monkeypatch, capsys):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    assert main(["examples", "--format", "json", "-o", "static.json", "--task", "S"]) == 1
    capsys.readouterr()
    assert main(["examples", "--dynamic", "--format", "json", "-o", "dynamic.json", "--task", "D", *FAST]) == 1
    # Without --entry the terminal is told, in one line, that none of the user's code was measured.
    assert capsys.readouterr().err.splitlines().count(CALIBRATION_ONLY) == 1
    static, dynamic = (json.loads((tmp_path / name).read_text()) for name in ("static.json", "dynamic.json"))
    assert dynamic["score"]["total"] == static["score"]["total"] == 55
    assert dynamic["decision"] == static["decision"]
    assert dynamic["dynamic"]["result"]["role"] == "calibration"
    report = (tmp_path / "reports" / "D.md").read_text()
    assert "### Calibration: the reference implementation on this machine" in report
    assert "**Measured figures:** none of the analysed code: the dynamic run measured the bundled reference" in report
    # The memory split and the memory verdict's basis, in JSON and in the report.
    result = dynamic["dynamic"]["result"]
    assert [(m["mode"], m["memory_split"]["estimated"]) for m in result["modes"]] == [("fp32", True), ("bf16", True)]
    memory = next(v for v in result["verdicts"] if v["name"] == "memory_reduction")
    assert memory["basis"] == ACTIVATIONS_BASIS and memory["measured"] is None
    assert "| Peak split: parameters / gradients / optimizer state / activations and other |" in report
    assert "(estimate, FakeTensorMode)" in report
    assert "estimates " in report and "% less activation memory (an estimate, never judged)" in report


def test_the_gpu_preset_is_refused_without_cuda(capsys):
    assert main(["bench", "--preset", "gpu", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == (
        "verify-perf bench: error: --preset gpu needs a CUDA device and none is in use here; use --preset tiny on CPU\n"
    )
