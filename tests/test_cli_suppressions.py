"""Suppressions through the command line: a blanket `# noqa` cannot pass the gate, a named one can,
and `require-suppression-reason` in the config asks for the reason."""

from __future__ import annotations

import pytest

from verifier.cli import main

TRAIN = """\
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize(){comment}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return tmp_path


def gate(capsys) -> tuple[int, list[str]]:
    code = main(["train.py", "--select", "VP2", "--no-report", "--no-cache", "--quiet"])
    return code, capsys.readouterr().out.splitlines()


def test_a_blanket_noqa_does_not_pass_a_blocking_finding(project, capsys):
    (project / "train.py").write_text(TRAIN.format(comment="  # noqa"))
    assert gate(capsys) == (1, [
        "train.py:9:9: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration",
        ("train.py:9:35: VP901 [LOW] a blanket `# noqa` does not silence verify-perf: VP203 on this line is still "
         "reported; name the rule to silence it (`# noqa: VP203`)"),
    ])


@pytest.mark.parametrize("comment", ["  # noqa: VP203", "  # noqa: E501, synchronize-in-loop", "  # verify-perf: ignore[VP203]"])
def test_a_named_suppression_passes(project, capsys, comment):
    (project / "train.py").write_text(TRAIN.format(comment=comment))
    assert gate(capsys) == (0, [])


def test_a_file_level_suppression_passes(project, capsys):
    (project / "train.py").write_text("# verify-perf: noqa: VP203\n" + TRAIN.format(comment=""))
    assert gate(capsys) == (0, [])


def test_required_reasons_come_from_the_config(project, capsys):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\nrequire-suppression-reason = true\n")
    (project / "train.py").write_text(TRAIN.format(comment="  # noqa: VP203"))
    code, lines = gate(capsys)
    assert (code, [line.split(" [")[0] for line in lines]) == (1, ["train.py:9:9: VP203", "train.py:9:35: VP901"])
    (project / "train.py").write_text(TRAIN.format(comment="  # noqa: VP203 -- this benchmark times each step"))
    assert gate(capsys) == (0, [])
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nrequire-suppression-reason = "yes"\n')
    assert main(["train.py", "--no-report", "--no-cache"]) == 2
    assert capsys.readouterr().err.endswith(
        "pyproject.toml: [tool.verify-perf] require-suppression-reason: expected true or false, got str 'yes'\n"
    )
