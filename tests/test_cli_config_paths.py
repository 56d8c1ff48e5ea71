"""Paths in `exclude` and `per-file-ignores` are relative to the folder of the config file that
declares them, whichever folder verify-perf runs from and whatever PATH it is given; with
`--force-exclude`, `exclude` applies to files named on the command line too (as pre-commit names them)."""

from __future__ import annotations

import json
import os

import pytest

from verifier.cli import main

SYNC = (
    "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"
    "    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.verify-perf]\nselect = ["VP203"]\nexclude = ["src/legacy/*", "generated"]\n'
        'per-file-ignores = { "src/bench/*" = ["VP203"] }\n'
    )
    for rel in ["src/train.py", "src/legacy/old.py", "src/bench/timing.py", "src/generated/model_pb2.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(SYNC)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return tmp_path


def reported(capsys, *argv) -> list[str]:
    main([*argv, "--format", "json", "--no-report", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    return sorted(os.path.normpath(f["path"]) for f in data["findings"])


@pytest.mark.parametrize("where", [".", "src", "src/bench"])
def test_the_same_files_are_excluded_and_ignored_from_every_folder(project, capsys, monkeypatch, where):
    monkeypatch.chdir(project / where)
    to_src = os.path.relpath(project / "src")
    assert reported(capsys, to_src) == [os.path.normpath(os.path.join(to_src, "train.py"))]


def test_per_file_ignores_apply_when_running_inside_the_ignored_folder(project, capsys, monkeypatch):
    monkeypatch.chdir(project / "src" / "bench")
    assert reported(capsys, ".") == []
    assert reported(capsys, "timing.py") == []


def test_a_named_excluded_file_is_analysed_unless_force_exclude(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert reported(capsys, "src/legacy/old.py", "src/generated/model_pb2.py") == [
        os.path.join("src", "generated", "model_pb2.py"), os.path.join("src", "legacy", "old.py")
    ]
    assert reported(capsys, "src/legacy/old.py", "src/train.py", "--force-exclude") == [os.path.join("src", "train.py")]
    assert reported(capsys, "src/generated/model_pb2.py", "src/train.py", "--force-exclude") == [
        os.path.join("src", "train.py")
    ]


def test_command_line_excludes_are_relative_to_the_working_directory(project, capsys, monkeypatch):
    monkeypatch.chdir(project / "src")
    assert reported(capsys, ".", "--exclude", "train.py") == []
    assert reported(capsys, ".", "--exclude", "src/train.py") == ["train.py"]


def test_extend_select_adds_to_the_configured_selection(project, capsys, monkeypatch):
    (project / "src" / "train.py").write_text(SYNC + "    print(loss.item())\n")
    monkeypatch.chdir(project)
    main(["src/train.py", "--format", "json", "--no-report", "--no-cache", "--extend-select", "VP201"])
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert codes == ["VP203", "VP201"]
    main(["src/train.py", "--format", "json", "--no-report", "--no-cache", "--select", "VP201"])
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["VP201"]


@pytest.mark.parametrize("selector", ["ALL", "all", "VP2", "VP203", "synchronize-in-loop", "SYNCHRONIZE-IN-LOOP"])
def test_per_file_ignores_read_each_entry_as_every_selector_is_read(tmp_path, capsys, monkeypatch, selector):
    # "ALL" passed the config check and then ignored nothing.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "pyproject.toml").write_text(f'[tool.verify-perf]\nper-file-ignores = {{ "bench/*" = ["{selector}"] }}\n')
    for rel in ("bench/timing.py", "train.py"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(SYNC)
    main([".", "--format", "json", "--no-report", "--no-cache", "--select", "VP203"])
    data = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["code"]) for f in data["findings"]] == [("train.py", "VP203")]
