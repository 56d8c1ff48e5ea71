"""`--baseline FILE`: new/existing/fixed through the command line, and blocking on new findings only."""

from __future__ import annotations

import json

import pytest

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
