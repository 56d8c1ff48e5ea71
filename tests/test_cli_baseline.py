"""`--baseline FILE`: new/existing/fixed through the command line, and blocking on new findings only."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.git_repo import git as run_git
from verifier.cli import main

TRAIN = """\
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    assert main(["train.py", "--select", "VP2", "--format", "json", "-o", "baseline.json", "--no-report"]) == 1
    return tmp_path


def run(capsys, *args) -> tuple[int, dict]:
    code = main(["train.py", "--select", "VP2", "--baseline", "baseline.json", "--format", "json", "--no-report", *args])
    return code, json.loads(capsys.readouterr().out)


def test_unchanged_code_has_only_existing_findings(project, capsys):
    code, report = run(capsys)
    assert [f["baseline_state"] for f in report["findings"]] == ["existing"]
    assert (report["baseline"]["new"], report["baseline"]["existing"], report["baseline"]["fixed"]) == (0, 1, [])
    assert code == 1  # without new-only, an existing HIGH still blocks


def test_existing_findings_do_not_block_with_new_only(project, capsys):
    (project / "train.py").write_text("# a comment that shifts every line\n\n" + TRAIN)
    code, report = run(capsys, "--block-on-new-only")
    assert report["findings"][0]["line"] == 11
    assert report["findings"][0]["baseline_state"] == "existing"
    assert code == 0


def test_a_new_blocking_finding_blocks_with_new_only(project, capsys):
    (project / "train.py").write_text(TRAIN + "        torch.cuda.synchronize()\n")
    code, report = run(capsys, "--block-on-new-only")
    assert [(f["line"], f["baseline_state"]) for f in report["findings"]] == [(9, "existing"), (10, "new")]
    assert code == 1
    assert report["decision"]["reasons"][0].startswith("HIGH VP203 synchronize-in-loop at train.py:10:")


def test_fixed_findings_are_listed_in_the_report(project, capsys):
    (project / "train.py").write_text(TRAIN.replace("        torch.cuda.synchronize()\n", ""))
    code, report = run(capsys)
    assert code == 0
    assert [(f["code"], f["line"]) for f in report["baseline"]["fixed"]] == [("VP203", 9)]
    main(["train.py", "--select", "VP2", "--baseline", "baseline.json", "--date", "2026-01-01"])
    text = (project / "reports" / "train.md").read_text()
    assert "Fixed since the baseline:" in text
    assert "- `train.py:9` VP203 [HIGH]" in text


def test_new_only_is_also_a_config_option(project, capsys):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\nblock-on-new-only = true\n")
    code, _ = run(capsys)
    assert code == 0


def test_new_only_flag_needs_a_baseline(project, capsys):
    assert main(["train.py", "--block-on-new-only", "--no-report"]) == 2
    assert "needs --baseline" in capsys.readouterr().err


# A rule that did not run, or a file that was not analysed, cannot say whether a finding was fixed.

NOT_COMPARED = "not compared (their rule did not run on their file, or the file was not analysed)"


@pytest.fixture
def full_baseline(tmp_path, monkeypatch):
    """A baseline made with every rule: VP306 (INFO, line 5) and VP203 (HIGH, line 9) in train.py."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    assert main(["train.py", "--format", "json", "-o", "all.json", "--no-report"]) == 1
    stored = json.loads((tmp_path / "all.json").read_text())
    assert [(f["code"], f["line"]) for f in stored["findings"]] == [("VP306", 5), ("VP203", 9)]
    return tmp_path


def summary(capsys, *args) -> tuple[int, list[str]]:
    code = main([*args, "--baseline", "all.json", "--no-report"])
    return code, [line for line in capsys.readouterr().out.splitlines() if line.startswith("Baseline")]


OTHER_RULES = "its score is not compared (it was made with other rules)"


def test_findings_of_rules_not_selected_are_not_fixed(full_baseline, capsys):
    code, lines = summary(capsys, "train.py", "--select", "VP2")
    assert lines == [f"Baseline all.json: 0 new, 1 existing, 0 fixed; 1 {NOT_COMPARED}; {OTHER_RULES}."]
    assert code == 1
    main(["train.py", "--select", "VP2", "--baseline", "all.json", "--format", "json", "--no-report"])
    baseline = json.loads(capsys.readouterr().out)["baseline"]
    assert (baseline["new"], baseline["existing"], baseline["fixed"], baseline["not_compared"]) == (0, 1, [], 1)
    assert (baseline["score"], baseline["score_compared"]) == (87, False)


def test_the_score_of_a_baseline_with_other_rules_is_not_compared(full_baseline, capsys):
    # All rules scored 87 and VP2 alone scores 50: "below the baseline's 87" would compare two
    # different measures, so block-on-new-only falls back to the minimum alone.
    code = main(["train.py", "--select", "VP2", "--baseline", "all.json", "--block-on-new-only",
                 "--format", "json", "--no-report"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["decision"]["reasons"] == ["score 50/100 is below the minimum 70"]
    assert report["rules"] == ["VP201", "VP202", "VP203", "VP204", "VP205", "VP206", "VP900", "VP901", "VP902"]
    main(["train.py", "--select", "VP2", "--baseline", "all.json", "--date", "2026-01-01"])
    text = (full_baseline / "reports" / "train.md").read_text()
    assert "(baseline score 87/100, made with other rules: not compared)" in text


def test_the_score_of_a_baseline_with_the_same_rules_is_compared(project, capsys):
    (project / "train.py").write_text(TRAIN + "        torch.cuda.synchronize()\n")
    code, report = run(capsys, "--block-on-new-only", "--min-score", "90")
    assert report["baseline"]["score_compared"] is True
    assert report["decision"]["reasons"][-1] == "score 25/100 is below the minimum 90 and below the baseline's 50"
    assert code == 1


def test_a_removed_finding_of_a_rule_that_ran_is_still_fixed(full_baseline, capsys):
    (full_baseline / "train.py").write_text(TRAIN.replace("        torch.cuda.synchronize()\n", ""))
    _, lines = summary(capsys, "train.py", "--select", "VP2")
    assert lines == [f"Baseline all.json: 0 new, 0 existing, 1 fixed; 1 {NOT_COMPARED}; {OTHER_RULES}."]


def test_findings_of_rules_ignored_for_the_file_are_not_fixed(full_baseline, capsys):
    (full_baseline / "pyproject.toml").write_text('[tool.verify-perf]\nper-file-ignores = { "train.py" = ["VP3"] }\n')
    _, lines = summary(capsys, "train.py")
    assert lines == [f"Baseline all.json: 0 new, 1 existing, 0 fixed; 1 {NOT_COMPARED}."]


def test_findings_in_files_not_analysed_are_not_fixed(full_baseline, capsys):
    (full_baseline / "other.py").write_text(TRAIN)
    assert main(["train.py", "other.py", "--format", "json", "-o", "all.json", "--no-report"]) == 1
    capsys.readouterr()
    _, lines = summary(capsys, "other.py")
    assert lines == [f"Baseline all.json: 0 new, 2 existing, 0 fixed; 2 {NOT_COMPARED}."]


def test_findings_of_a_file_that_no_longer_parses_are_not_fixed(full_baseline, capsys):
    (full_baseline / "train.py").write_text(TRAIN + "    def broken(:\n")
    _, lines = summary(capsys, "train.py")
    assert lines == [f"Baseline all.json: 1 new, 0 existing, 0 fixed; 2 {NOT_COMPARED}."]


def test_a_finding_silenced_by_a_comment_is_not_fixed(full_baseline, capsys):
    (full_baseline / "train.py").write_text(
        TRAIN.replace("torch.cuda.synchronize()\n", "torch.cuda.synchronize()  # verify-perf: ignore[VP203]\n")
    )
    _, lines = summary(capsys, "train.py")
    assert lines == ["Baseline all.json: 0 new, 1 existing, 0 fixed."]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_with_diff_the_new_findings_are_compared_and_unchanged_ones_are_not_fixed(tmp_path, monkeypatch, capsys):
    def git(*args):
        run_git(tmp_path, *args)

    monkeypatch.chdir(tmp_path)
    git("init", "-q", "-b", "main")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "other.py").write_text(
        "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n    model(batch.cuda()).sum().backward()\n"
    )
    git("add", ".")
    git("commit", "-q", "-m", "base")
    assert main(["train.py", "other.py", "--select", "VP2", "--format", "json", "-o", "all.json", "--no-report"]) == 1
    (tmp_path / "train.py").write_text(TRAIN + "        print(loss.item())\n")
    _, lines = summary(capsys, ".", "--select", "VP2", "--diff", "main")
    # Diff mode reports VP201 on the added line (the merge base did not have it): new to the
    # baseline too. The VP203 of train.py and other.py are still there, so neither is fixed.
    assert lines == ["Baseline all.json: 1 new, 0 existing, 0 fixed."]


# Identity, not place: a renamed file, a moved function and an older baseline keep accepted debt.

METRICS = """\
import torch


def wait_for_device():
    torch.cuda.synchronize()
"""

LOOP = """\
import torch
from {module} import wait_for_device


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        wait_for_device()
"""


def git_in(folder):
    def git(*args):
        run_git(folder, *args)

    return git


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_renamed_file_keeps_its_accepted_findings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    git = git_in(tmp_path)
    git("init", "-q", "-b", "main")
    (tmp_path / "metrics.py").write_text(METRICS)
    (tmp_path / "train.py").write_text(LOOP.format(module="metrics"))
    git("add", ".")
    git("commit", "-q", "-m", "train")
    assert main([".", "--format", "json", "-o", "base.json", "--no-report"]) == 1
    assert main([".", "--format", "sarif", "-o", "before.sarif", "--no-report"]) == 1
    stored = json.loads((tmp_path / "base.json").read_text())["findings"]
    assert [(f["path"], f["line"], f["code"], f["severity"]) for f in stored] == [
        ("metrics.py", 5, "VP203", "HIGH"), ("train.py", 6, "VP306", "INFO"),
    ]
    git("mv", "metrics.py", "train_metrics.py")
    (tmp_path / "train.py").write_text(LOOP.format(module="train_metrics"))
    code = main([".", "--baseline", "base.json", "--block-on-new-only", "--format", "json", "--no-report"])
    report = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["code"], f["baseline_state"]) for f in report["findings"]] == [
        ("train.py", 6, "VP306", "existing"), ("train_metrics.py", 5, "VP203", "existing"),
    ]
    baseline = report["baseline"]
    assert (baseline["new"], baseline["existing"], baseline["fixed"], baseline["not_compared"]) == (0, 2, [], 0)
    assert code == 0
    # Code scanning tracks the same results: their partial fingerprints did not change.
    assert main([".", "--format", "sarif", "-o", "after.sarif", "--no-report"]) == 1

    def partial(name):
        results = json.loads((tmp_path / name).read_text())["runs"][0]["results"]
        return sorted((r["ruleId"], r["partialFingerprints"]["verifyPerf/v2"]) for r in results)

    assert partial("before.sarif") == partial("after.sarif")
    assert sorted((f["code"], f["fingerprint"]) for f in stored) == partial("after.sarif")


def test_a_function_moved_within_its_file_keeps_its_findings(project, capsys):
    (project / "train.py").write_text(TRAIN.replace("import torch\n", "import torch\n\n\ndef first():\n    return 1\n"))
    code, report = run(capsys, "--block-on-new-only")
    assert [(f["line"], f["baseline_state"]) for f in report["findings"]] == [(13, "existing")]
    assert code == 0


def test_a_finding_now_more_severe_than_in_the_baseline_is_new(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nseverity = { VP203 = "MEDIUM" }\n')
    assert main(["train.py", "--select", "VP2", "--format", "json", "-o", "baseline.json", "--no-report"]) == 0
    (project / "pyproject.toml").unlink()
    code, report = run(capsys, "--block-on-new-only")
    assert [(f["line"], f["severity"], f["baseline_state"]) for f in report["findings"]] == [(9, "HIGH", "new")]
    assert code == 1


def test_a_baseline_of_schema_version_1_is_matched_by_path_and_line_text(project, capsys):
    stored = json.loads((project / "baseline.json").read_text())
    legacy = {**stored, "schema_version": 1}
    # Version 1 fingerprinted rule, path, first line and occurrence.
    legacy["findings"] = [{**f, "fingerprint": ""} for f in stored["findings"]]
    (project / "baseline.json").write_text(json.dumps(legacy))
    (project / "train.py").write_text("# shifted\n" + TRAIN)
    code, report = run(capsys, "--block-on-new-only")
    assert [(f["line"], f["baseline_state"]) for f in report["findings"]] == [(10, "existing")]
    assert code == 0


@pytest.mark.parametrize("content", ["", "{", '{"findings": 1}'])
def test_a_baseline_that_is_not_one_is_refused_before_the_analysis(tmp_path, monkeypatch, capsys, content):
    # It was read after the analysis: the cache (and the report) were written by a run that failed.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "base.json").write_text(content)
    assert main(["train.py", "--baseline", "base.json"]) == 2
    assert capsys.readouterr().err.startswith("verify-perf: error: --baseline base.json: not")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json", "train.py"]
