"""`severity = { VP201 = { step = "HIGH" } }`: a rule's severity per heat, so per-step reads can
block while evaluation-loop reads stay as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier.cli import main

TRAIN = """\
import torch


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        for x in loader:
            print(model(x).sum().item())


def train(model, loader, optimizer):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        print(loss.item())
    evaluate(model, loader)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def reads(capsys, severity: str | None) -> tuple[int, list[tuple[int, str, str]]]:
    if severity is not None:
        Path("pyproject.toml").write_text(f"[tool.verify-perf]\nseverity = {severity}\n")
    code = main(["train.py", "--select", "VP201", "--format", "json", "--no-report", "--no-cache"])
    found = json.loads(capsys.readouterr().out)["findings"]
    return code, [(f["line"], f["heat"], f["severity"]) for f in found]


def test_without_an_override_the_rule_decides(project, capsys):
    assert reads(capsys, None) == (0, [(8, "eval", "LOW"), (17, "step", "MEDIUM")])


def test_a_step_override_makes_per_step_reads_block_and_leaves_evaluation_reads(project, capsys):
    assert reads(capsys, '{ VP201 = { step = "HIGH" } }') == (1, [(8, "eval", "LOW"), (17, "step", "HIGH")])


def test_an_eval_override_is_still_capped_by_what_the_finding_can_prove(project, capsys):
    # The evaluation read's value is assumed to be on the device: MEDIUM at most, whatever is configured.
    assert reads(capsys, '{ VP201 = { eval = "HIGH" } }') == (0, [(8, "eval", "MEDIUM"), (17, "step", "MEDIUM")])


def test_a_rule_wide_override_and_a_heat_override_combine_in_order(project, capsys):
    assert reads(capsys, '{ VP2 = "LOW", VP201 = { step = "CRITICAL" } }') == (1, [(8, "eval", "LOW"), (17, "step", "CRITICAL")])


def test_show_settings_prints_the_heats_set(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nseverity = { VP203 = "LOW", VP201 = { eval = "LOW", step = "HIGH" } }\n')
    assert main([".", "--show-settings"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "severity = VP201 = { step = HIGH, eval = LOW }, VP203 = LOW" in lines


def test_an_unknown_heat_is_a_usage_error_naming_the_key(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nseverity = { VP201 = { per-step = "HIGH" } }\n')
    assert main(["train.py", "--no-report", "--no-cache"]) == 2
    assert capsys.readouterr().err == (
        f"verify-perf: error: {project / 'pyproject.toml'}: [tool.verify-perf] severity.VP201.per-step: unknown heat "
        "(did you mean 'step'? heats: step, eval, epoch, once)\n"
    )
