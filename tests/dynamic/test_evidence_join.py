"""Static findings and runtime evidence joined both ways, as a user runs it (issue 12, item 7)."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from verifier.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = ["--device", "cpu", "--warmup", "1", "--steps", "1", "--repeats", "2", "--max-repeats", "2", "--sync-steps", "2", "--accuracy-steps", "3", "--accuracy-seeds", "2", "--time-budget", "300"]


@pytest.fixture
def project(tmp_path, monkeypatch, entry_fixtures):
    shutil.copy(entry_fixtures / "sync_steps.py", tmp_path / "sync_steps.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("sync_steps", None)
    yield tmp_path
    sys.modules.pop("sync_steps", None)  # the next test imports the fixture's own copy


def line_of(path, text: str) -> int:
    """The number of the line that reads exactly `text`, indent included."""
    return path.read_text().splitlines().index(text) + 1


def findings(entry: str) -> list[dict]:
    assert main(["sync_steps.py", "--dynamic", "--entry", entry, "--format", "json", "-o", "out.json", "--no-report", *FAST]) == 0
    with open("out.json") as handle:
        return json.load(handle)["findings"]


def test_a_static_finding_at_a_syncing_line_is_confirmed_with_its_count(project):
    line = line_of(project / "sync_steps.py", "    return loss.item() + loss.detach().abs().item()")
    at_line = [(f["code"], f["column"], f["runtime"]) for f in findings("sync_steps:two_items") if f["line"] == line]
    # One statement, one VP201 finding; the runtime count covers both reads on the line.
    assert at_line == [("VP201", 12, "confirmed at runtime: 2 syncs per step")]


def test_a_sync_the_rules_cannot_see_becomes_a_runtime_only_finding(project):
    line = line_of(project / "sync_steps.py", "    read()")
    runtime_only = [f for f in findings("sync_steps:hidden_sync") if f["code"] == "VP290"]
    assert [(f["path"], f["line"], f["column"], f["severity"], f["heat"], f["runtime"]) for f in runtime_only] == [
        ("sync_steps.py", line, 5, "MEDIUM", "step", "runtime-only: 1 syncs per step measured, no static finding at this line")
    ]


def test_a_per_step_finding_on_lines_that_never_ran_is_not_observed(project):
    line = line_of(project / "sync_steps.py", "    return loss.item()")
    never = [f["runtime"] for f in findings("sync_steps:two_items") if f["line"] == line]
    assert never == ["not observed at runtime: the line did not run in the measured step"]


def test_host_only_reads_give_no_finding_and_no_count(project):
    result = findings("sync_steps:host_reads_only")
    assert [f for f in result if f["code"] == "VP290"] == []
    with open("out.json") as handle:
        modes = json.load(handle)["dynamic"]["result"]["modes"]
    assert [(m["mode"], m["user_syncs_per_step"], m["library_syncs_per_step"]) for m in modes] == [("fp32", 0.0, 0.0), ("bf16", 0.0, 0.0)]


def test_a_calibration_run_joins_nothing(tmp_path, monkeypatch, entry_fixtures):
    shutil.copy(entry_fixtures / "sync_steps.py", tmp_path / "sync_steps.py")
    monkeypatch.chdir(tmp_path)
    assert main(["sync_steps.py", "--dynamic", "--format", "json", "-o", "out.json", "--no-report", *FAST]) == 0
    assert {f["runtime"] for f in json.loads((tmp_path / "out.json").read_text())["findings"]} == {""}
