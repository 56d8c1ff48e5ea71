"""Every output format x with or without --baseline x without --dynamic, a calibration run and a
measured --entry: each combination renders, exits as the decision says, and counts every finding,
runtime-only ones (VP290) included, as new or existing against the baseline.

The harness measures the entry once per module (the fast matrix reuses that measured result);
the matrix that runs the harness for every combination, calibration included, is slow.
"""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("torch")

from verifier import check
from verifier.cli import main
from verifier.dynamic.results import DynamicResult

FIXTURE = Path(__file__).parent / "dynamic" / "fixtures" / "sync_steps.py"
FAST = [
    "--device", "cpu", "--warmup", "1", "--steps", "1", "--repeats", "2", "--max-repeats", "2", "--sync-steps", "2",
    "--accuracy-steps", "3", "--accuracy-seeds", "2", "--threads", "1",
]
ENTRY = "sync_steps:hidden_sync"
# What the fixture holds: five static findings, and one sync only the harness sees (line 42).
STATIC = [("VP104", 23), ("VP104", 24), ("VP201", 33), ("VP201", 50), ("VP306", 55)]
RUNTIME_ONLY = ("VP290", 42)
FORMATS = [
    "text", "concise", "json", "sarif", "github", "gitlab", "junit", "markdown", "text-statistics", "json-statistics",
]
BASELINES = [None, "static.json", "measured.json"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A project holding the entry fixture, its two baselines (a static run and a measured run),
    and the measured result of the entry, taken once."""
    folder = tmp_path_factory.mktemp("matrix")
    shutil.copy(FIXTURE, folder / "sync_steps.py")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.syspath_prepend(str(folder))
        patch.setenv("GIT_CEILING_DIRECTORIES", str(folder.parent))
        sys.modules.pop("sync_steps", None)
        assert main(["sync_steps.py", "--format", "json", "-o", "static.json", "--no-report", "--no-cache"]) == 0
        argv = ["sync_steps.py", "--dynamic", "--entry", ENTRY, "--format", "json", "-o", "measured.json", "--no-report"]
        assert main([*argv, "--no-cache", *FAST]) == 0
        sys.modules.pop("sync_steps", None)
    stored = json.loads((folder / "measured.json").read_text())
    assert [(f["code"], f["line"]) for f in stored["findings"]] == sorted([*STATIC, RUNTIME_ONLY], key=lambda f: f[1])
    return folder, DynamicResult.from_dict(stored["dynamic"]["result"])


def expected_counts(baseline: str | None, runtime: bool) -> tuple[int, int, int, int] | None:
    """(new, existing, fixed, not compared) against the baseline, None without one."""
    if baseline is None:
        return None
    if baseline == "static.json":
        return (1, 5, 0, 0) if runtime else (0, 5, 0, 0)
    # The measured baseline's VP290 is found again only by a run that counts syncs.
    return (0, 6, 0, 0) if runtime else (0, 5, 0, 1)


def run(folder: Path, output_format: str, baseline: str | None, dynamic: list[str]) -> tuple[int, str, str]:
    """One run writing its output and its markdown report to files; (exit code, output, report)."""
    name = output_format.replace("-", ".")
    argv = ["sync_steps.py", "--no-cache", "--report-dir", f"reports-{name}", "-o", f"out.{name}"]
    argv += ["--format", output_format.split("-")[0]]
    if output_format.endswith("statistics"):
        argv.append("--statistics")
    if baseline:
        argv += ["--baseline", baseline]
    code = main([*argv, *dynamic])
    output = (folder / f"out.{name}").read_text()
    report_path = folder / f"reports-{name}" / "sync_steps.md"
    report = output if output_format == "markdown" else report_path.read_text()
    return code, output, report


def check_output(output_format: str, output: str, report: str, baseline: str | None, runtime: bool) -> None:
    """What each format must say about the findings and the baseline, exactly."""
    findings = sorted([*STATIC, *([RUNTIME_ONLY] if runtime else [])], key=lambda f: f[1])
    counts = expected_counts(baseline, runtime)
    summary = None
    if counts is not None:
        new, existing, fixed, not_compared = counts
        summary = f"Baseline {baseline}: {new} new, {existing} existing, {fixed} fixed"
        if not_compared:
            summary += f"; {not_compared} not compared (their rule did not run on their file, or the file was not analysed)"
    if counts is None:
        assert "Not requested (`--baseline FILE`)." in report
    else:
        assert f"\nBaseline `{baseline}`: {counts[0]} new, {counts[1]} existing, {counts[2]} fixed.\n" in report
    if output_format == "json":
        document = json.loads(output)
        assert [(f["code"], f["line"]) for f in document["findings"]] == findings
        if counts is None:
            assert document["baseline"] is None
            assert all("baseline_state" not in f for f in document["findings"])
        else:
            states = {(f["code"], f["line"]): f["baseline_state"] for f in document["findings"]}
            assert [key for key, state in states.items() if state == "new"] == ([RUNTIME_ONLY] if counts[0] else [])
            stored = document["baseline"]
            assert (stored["new"], stored["existing"], len(stored["fixed"]), stored["not_compared"]) == counts
    elif output_format == "sarif":
        results = json.loads(output)["runs"][0]["results"]
        assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == findings
        states = [r.get("baselineState") for r in results]
        if counts is None:
            assert states == [None] * len(findings)
        else:
            assert states == ["new" if counts[0] and key == RUNTIME_ONLY else "unchanged" for key in findings]
    elif output_format == "text":
        lines = output.splitlines()
        shown = [line.split(":", 3) for line in lines if line.startswith("sync_steps.py:")]
        assert [(rest.split()[0], int(line)) for _, line, _, rest in shown] == findings
        marked = [int(line) for _, line, _, rest in shown if "] (new) " in rest]
        assert marked == ([42] if counts and counts[0] else [])
        assert (summary + "." in lines) if summary else not any(line.startswith("Baseline ") for line in lines)
        assert lines[-1] == "Decision: PASS"
    elif output_format == "concise":
        lines = output.splitlines()
        shown = [line.split(":", 3) for line in lines if line.startswith("sync_steps.py:")]
        assert [(rest.split()[0], int(line)) for _, line, _, rest in shown] == findings
        assert [int(line) for _, line, _, rest in shown if "] (new) " in rest] == ([42] if counts and counts[0] else [])
        assert len(shown) + 3 + bool(summary) == len(lines)  # nothing but the findings and the summary
        assert lines[-1] == "Decision: PASS"
    elif output_format == "gitlab":
        issues = json.loads(output)
        assert [(i["check_name"], i["location"]["lines"]["begin"]) for i in issues] == findings
        assert len({i["fingerprint"] for i in issues}) == len(issues)
    elif output_format == "junit":
        root = ET.fromstring(output.encode())
        cases = root.find("testsuite[@name='sync_steps.py']").findall("testcase")
        assert [(c.get("name").split()[0], int(c.get("line"))) for c in cases] == findings
        new = [int(c.get("line")) for c in cases if "] (new) " in c.find("failure").text]
        assert new == ([42] if counts and counts[0] else [])
        assert root.find("testsuite[@name='verify-perf']/testcase/failure") is None  # the gate passed
    elif output_format == "github":
        lines = output.splitlines()
        assert [(line.split("title=")[1].split(" ")[0], int(line.split("line=")[1].split(",")[0])) for line in lines] == findings
    elif output_format == "markdown":
        assert ("`sync_steps.py:42`" in output) is runtime
    elif output_format == "json-statistics":
        codes = {row["code"]: row["count"] for row in json.loads(output)}
        assert codes == {"VP104": 2, "VP201": 2, "VP306": 1, **({"VP290": 1} if runtime else {})}
    elif output_format == "text-statistics":
        rows = [line.split("\t")[:2] for line in output.splitlines() if "\t" in line]
        assert sorted(rows) == sorted([["2", "VP104"], ["2", "VP201"], ["1", "VP306"], *([["1", "VP290"]] if runtime else [])])


@pytest.mark.parametrize("baseline", BASELINES, ids=lambda b: f"baseline={b}")
@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("with_entry", [False, True], ids=["static", "entry"])
def test_every_format_with_and_without_a_baseline_and_an_entry(measured, monkeypatch, output_format, baseline, with_entry):
    folder, result = measured
    monkeypatch.chdir(folder)
    dynamic = ["--dynamic", "--entry", ENTRY] if with_entry else []
    if with_entry:
        # The entry's measured result, as the harness returned it once for this module.
        monkeypatch.setattr(check, "_dynamic", lambda args, settings, task: (result, "", False))
    code, output, report = run(folder, output_format, baseline, dynamic)
    assert code == 0
    check_output(output_format, output, report, baseline, runtime=with_entry)


@pytest.mark.parametrize("output_format", ["json", "sarif", "text"])
def test_a_new_runtime_only_finding_blocks_with_new_only_where_its_severity_blocks(measured, monkeypatch, output_format):
    folder, result = measured
    monkeypatch.chdir(folder)
    monkeypatch.setattr(check, "_dynamic", lambda args, settings, task: (result, "", False))
    (folder / "medium.toml").write_text('[tool.verify-perf]\nblock-on = ["MEDIUM"]\n')
    argv = ["--config", "medium.toml", "--block-on-new-only", "--dynamic", "--entry", ENTRY]
    assert main(["sync_steps.py", "--no-cache", "--no-report", "--format", output_format, "-o", "o", "--baseline",
                 "static.json", *argv]) == 1
    assert main(["sync_steps.py", "--no-cache", "--no-report", "--format", output_format, "-o", "o", "--baseline",
                 "measured.json", *argv]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("baseline", BASELINES, ids=lambda b: f"baseline={b}")
@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("mode", ["calibration", "entry"])
def test_every_format_with_the_harness_run_for_real(measured, monkeypatch, output_format, baseline, mode):
    folder, _ = measured
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("sync_steps", None)
    dynamic = ["--dynamic", *(["--entry", ENTRY] if mode == "entry" else []), *FAST]
    code, output, report = run(folder, output_format, baseline, dynamic)
    sys.modules.pop("sync_steps", None)
    assert code == 0
    # A calibration run measures the reference implementation: it joins nothing to the findings.
    check_output(output_format, output, report, baseline, runtime=mode == "entry")


@pytest.mark.slow
def test_a_stored_runtime_only_finding_is_fixed_when_a_measured_run_no_longer_sees_it(measured, monkeypatch):
    folder, _ = measured
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("sync_steps", None)
    argv = ["sync_steps.py", "--no-cache", "--no-report", "--format", "json", "-o", "fixed.json", "--baseline",
            "measured.json", "--dynamic", "--entry", "sync_steps:two_items", *FAST]
    assert main(argv) == 0
    sys.modules.pop("sync_steps", None)
    stored = json.loads((folder / "fixed.json").read_text())["baseline"]
    assert [(f["code"], f["line"]) for f in stored["fixed"]] == [RUNTIME_ONLY]
    assert (stored["new"], stored["existing"], stored["not_compared"]) == (0, 5, 0)
