"""`--output-format` (ruff's name for `--format`) and the formats ruff users feed their CI:
`concise`, `gitlab` (a GitLab Code Quality report) and `junit` (JUnit XML)."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from verifier.cli import main

# The suppressed finding is a process spawn, not a read of the device: the synchronize stays the
# step's only wait (a read there would make it a second wait, LOW).
TRAIN = (
    "import subprocess, torch\n\n"
    "for batch in loader:\n"
    "    loss = model(batch.cuda())\n"
    "    subprocess.run([\"nvidia-smi\"])  # verify-perf: ignore[VP204]\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    torch.cuda.synchronize()\n"
)
HEADLINE = "`synchronize()` in a loop blocks the host on every iteration"
EVAL = (
    "import torch\n\n"
    "with torch.no_grad():\n"
    "    for batch in val_loader:\n"
    "        print(model(batch.cuda()).item())\n"
)
ARGS = ("--no-report", "--no-cache", "--select", "VP2", "--date", "2025-01-01")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    (tmp_path / "src" / "clean.py").write_text("x = 1\n")
    return tmp_path


def output(capsys, *argv) -> tuple[int, str]:
    code = main([*argv, *ARGS])
    return code, capsys.readouterr().out


def test_output_format_is_format(project, capsys):
    for name in ("text", "json", "sarif", "github", "concise", "gitlab", "junit"):
        assert output(capsys, "src", "--output-format", name) == output(capsys, "src", "--format", name)
    assert main(["src", "--output-format", "pylint"]) == 2
    assert "argument --format/--output-format: invalid choice: 'pylint'" in capsys.readouterr().err


def test_concise_is_one_line_per_finding_then_the_summary(project, capsys):
    code, out = output(capsys, "src", "--output-format", "concise")
    assert code == 1
    assert out.splitlines() == [
        f"src/train.py:8:5: VP203 [HIGH] {HEADLINE}",
        "Score: 50/100 (below the minimum 70, static categories only).",
        "Found 1 finding (1 HIGH) in 1 of 2 analysed files; 1 suppressed by comments.",
        "Decision: BLOCK: 1 blocking finding",
    ]
    code, quiet = output(capsys, "src", "--output-format", "concise", "-q")
    assert (code, quiet) == (1, out.splitlines()[0] + "\n")


def test_gitlab_code_quality_report(project, capsys):
    code, out = output(capsys, "src", "--output-format", "gitlab")
    assert code == 1
    issues = json.loads(out)
    assert [{k: v for k, v in issue.items() if k != "fingerprint"} for issue in issues] == [{
        "type": "issue",
        "check_name": "VP203",
        "description": f"VP203 synchronize-in-loop: {HEADLINE}",
        "categories": ["Performance"],
        "severity": "critical",
        "location": {"path": "src/train.py", "lines": {"begin": 8, "end": 8}},
    }]
    # The fingerprint is the finding's identity, the one JSON and SARIF carry.
    _, document = output(capsys, "src", "--format", "json")
    assert [i["fingerprint"] for i in issues] == [f["fingerprint"] for f in json.loads(document)["findings"]]


def test_gitlab_maps_every_severity_and_keeps_fingerprints_unique(project, capsys):
    (project / "src" / "copy.py").write_text(TRAIN)  # the same finding in a second file
    (project / "src" / "evaluate.py").write_text(EVAL)
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nseverity = { VP203 = "CRITICAL" }\n')
    issues = json.loads(output(capsys, "src", "--output-format", "gitlab", "--select", "ALL")[1])
    fingerprints = [issue["fingerprint"] for issue in issues]
    assert len(set(fingerprints)) == len(fingerprints)
    assert {issue["severity"] for issue in issues} <= {"info", "minor", "major", "critical", "blocker"}
    assert {"blocker", "info"} <= {issue["severity"] for issue in issues}
    by_file = {issue["location"]["path"]: issue for issue in issues if issue["check_name"] == "VP203"}
    assert sorted(by_file) == ["src/copy.py", "src/train.py"]


def test_gitlab_paths_are_relative_to_ci_project_dir(project, capsys, monkeypatch):
    monkeypatch.setenv("CI_PROJECT_DIR", str(project))
    os.chdir(project / "src")
    issues = json.loads(output(capsys, "train.py", "--output-format", "gitlab")[1])
    assert [issue["location"]["path"] for issue in issues] == ["src/train.py"]


def test_gitlab_without_findings_is_an_empty_array(project, capsys):
    assert output(capsys, "src/clean.py", "--output-format", "gitlab") == (0, "[]\n")


def test_junit_parses_and_says_what_each_file_holds(project, capsys):
    code, out = output(capsys, "src", "--output-format", "junit")
    assert code == 1
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(out.encode())
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "4", "failures": "2", "errors": "0", "skipped": "1",
    }
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert list(suites) == ["verify-perf", "src/clean.py", "src/train.py"]
    gate = suites["verify-perf"].find("testcase")
    assert gate.get("name") == "gate decision"
    assert gate.find("failure").get("message").startswith("BLOCK: ")
    clean = suites["src/clean.py"].findall("testcase")
    assert [(c.get("name"), list(c)) for c in clean] == [("no findings", [])]
    cases = suites["src/train.py"].findall("testcase")
    assert [(c.get("name"), c.get("line")) for c in cases] == [
        ("VP204 subprocess-in-loop at 5:5", "5"), ("VP203 synchronize-in-loop at 8:5", "8"),
    ]
    assert cases[0].find("skipped").get("message") == "suppressed by a comment"
    failure = cases[1].find("failure")
    assert (failure.get("type"), failure.get("message")) == ("HIGH", f"[HIGH] {HEADLINE}")
    assert failure.text.splitlines() == [
        f"src/train.py:8:5: VP203 [HIGH] {HEADLINE}",
        "    = note: runs every step: inside the step loop at src/train.py:3 (iterates loader, calls optimizer.step())",
    ]


def test_junit_passes_when_the_gate_passes(project, capsys):
    root = ET.fromstring(output(capsys, "src/clean.py", "--output-format", "junit")[1].encode())
    assert root.get("failures") == "0" and root.get("tests") == "2"


def test_junit_survives_names_xml_cannot_hold(project, capsys):
    odd = "caf\udce9 \x1b[31m.py"
    with open(os.fsencode(project / "src") + b"/" + os.fsencode(odd), "w") as handle:
        handle.write(TRAIN)
    out = output(capsys, "src", "--output-format", "junit")[1]
    names = [suite.get("name") for suite in ET.fromstring(out.encode()).findall("testsuite")]
    assert "src/caf\\xe9 \\x1b[31m.py" in names


def test_new_formats_are_deterministic_and_written_with_o(project, capsys):
    for name in ("concise", "gitlab", "junit"):
        first = output(capsys, "src", "--output-format", name)[1]
        assert main(["src", *ARGS, "--output-format", name, "-o", f"out.{name}"]) == 1
        assert (project / f"out.{name}").read_text(encoding="utf-8") == first
