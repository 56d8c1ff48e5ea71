"""Preview rules (like ruff's): run only when preview is enabled, by flag or config."""

from __future__ import annotations

import json

import pytest

from verifier.cli import main
from verifier.rules import rule_by_selector

TRAIN = (
    "import torch\n\n"
    "for batch in loader:\n"
    "    loss = model(batch.cuda())\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    print(loss.item())\n"
    "    torch.cuda.synchronize()\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(TRAIN)
    # VP203 stands in for a rule still in preview.
    (vp203,) = rule_by_selector("VP203")
    monkeypatch.setattr(vp203, "preview", True)
    return tmp_path


def codes(capsys, *argv: str) -> tuple[int, list[tuple[str, int, str]]]:
    status = main(["train.py", "--no-report", "--no-cache", "--format", "json", *argv])
    findings = json.loads(capsys.readouterr().out)["findings"]
    return status, [(f["code"], f["line"], f["severity"]) for f in findings]


def test_a_preview_rule_does_not_run_by_default(project, capsys):
    status, found = codes(capsys, "--isolated")
    assert found == [("VP306", 3, "INFO"), ("VP102", 4, "LOW"), ("VP201", 7, "MEDIUM")]
    assert status == 0


def test_the_flag_enables_preview_rules(project, capsys):
    status, found = codes(capsys, "--isolated", "--preview")
    # A second wait after the step's loss read: LOW, so the decision does not change.
    assert ("VP203", 8, "LOW") in found
    assert status == 0


def test_the_config_enables_preview_rules(project, capsys):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\npreview = true\n")
    status, found = codes(capsys)
    assert ("VP203", 8, "LOW") in found


def test_selecting_only_preview_rules_without_preview_is_a_usage_error(project, capsys):
    assert main(["train.py", "--no-report", "--isolated", "--select", "VP203"]) == 2
    assert "'VP203' names preview rules only; enable them with --preview" in capsys.readouterr().err


def test_a_prefix_leaves_preview_rules_out_without_preview(project, capsys):
    status, found = codes(capsys, "--isolated", "--select", "VP2")
    assert found == [("VP201", 7, "MEDIUM")]


def test_settings_and_rule_docs_say_preview(project, capsys):
    assert main(["train.py", "--isolated", "--preview", "--show-settings"]) == 0
    assert "preview = true" in capsys.readouterr().out
    assert main(["rule", "VP203", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["preview"] is True
    assert main(["rule", "VP203"]) == 0
    assert "This rule is in preview: it runs only with `--preview`" in capsys.readouterr().out


def test_preview_must_be_a_boolean_in_the_config(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\npreview = "yes"\n')
    assert main(["train.py", "--no-report"]) == 2
    assert "[tool.verify-perf] preview: expected true or false, got str 'yes'" in capsys.readouterr().err


def test_a_bare_suppression_names_no_rule_with_or_without_preview(project, capsys):
    # A bare directive silences nothing, whichever rules can run.
    (project / "train.py").write_text("import torch\n\nx = torch.zeros(3)  # verify-perf: ignore\n")
    assert codes(capsys, "--isolated")[1] == [("VP901", 3, "LOW")]
    assert codes(capsys, "--isolated", "--preview")[1] == [("VP901", 3, "LOW")]
