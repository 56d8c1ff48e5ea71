"""Invocation as ruff users expect it: no PATH is `.`, `verify-perf check PATH` is `verify-perf
PATH`, and `-` with `--stdin-filename` analyses standard input under that name."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from tests.snippets import SYNC
from verifier.cli import main

CLEAN = "import torch\n\nmodel = torch.nn.Linear(2, 2)\n"
FINDING = "train.py:7:5: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration"
QUIET = ("--no-report", "--no-cache", "-q", "--select", "VP203")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(SYNC)
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_no_path_analyses_the_working_directory(project, capsys):
    assert run(capsys, *QUIET) == (1, f"{FINDING}\n", "")
    assert run(capsys, ".", *QUIET) == (1, f"{FINDING}\n", "")
    assert main(["--show-files"]) == 0
    assert capsys.readouterr().out == "train.py\n"


def test_check_is_the_same_command(project, capsys):
    assert run(capsys, "check", *QUIET) == run(capsys, *QUIET)
    assert run(capsys, "check", "train.py", *QUIET) == (1, f"{FINDING}\n", "")
    assert run(capsys, "check", "--format", "json", "--no-report", "--no-cache")[1] == run(
        capsys, "--format", "json", "--no-report", "--no-cache")[1]
    code, out, _ = run(capsys, "check", "--help")
    assert code == 0 and out.startswith("usage: verify-perf check ")


def test_a_folder_named_check_is_analysed_as_a_path(project, capsys):
    (project / "check").mkdir()
    (project / "check" / "train.py").write_text(SYNC)
    (project / "train.py").write_text(CLEAN)
    expected = f"check/{FINDING}\n"
    assert run(capsys, "./check", *QUIET) == (1, expected, "")
    assert run(capsys, "check", "check", *QUIET) == (1, expected, "")
    # `check` alone is the subcommand: the whole folder is analysed, and the note says so.
    assert run(capsys, "check", *QUIET) == (1, expected, (
        "verify-perf: note: `check` is the subcommand (as in `ruff check`), so `.` is analysed; "
        "to analyse only ./check, name it `./check`\n"
    ))


def test_rule_is_still_the_rule_subcommand(project, capsys):
    code, out, _ = run(capsys, "rule", "VP203", "--format", "json")
    assert code == 0 and json.loads(out)["code"] == "VP203"


def with_stdin(monkeypatch, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_stdin_is_reported_under_its_name_and_nothing_is_written(project, capsys, monkeypatch):
    (project / "train.py").write_text(CLEAN)  # the disk's copy is neither read nor changed
    before = sorted(os.listdir(project))
    with_stdin(monkeypatch, SYNC)
    assert run(capsys, "-", "--stdin-filename", "train.py", "--select", "VP203", "-q") == (1, f"{FINDING}\n", "")
    assert sorted(os.listdir(project)) == before
    assert (project / "train.py").read_text() == CLEAN


def test_stdin_without_a_path_and_under_a_name_that_does_not_exist(project, capsys, monkeypatch):
    with_stdin(monkeypatch, SYNC)
    assert run(capsys, "--stdin-filename", "new/train.py", "--select", "VP203", "-q") == (1, f"new/{FINDING}\n", "")
    assert not (project / "new").exists()


@pytest.mark.parametrize("text", [CLEAN, SYNC, "def broken(:\n"], ids=["clean", "blocking", "syntax-error"])
def test_stdin_exit_code_and_output_are_the_files(project, capsys, monkeypatch, text):
    (project / "same.py").write_text(text)
    as_file = run(capsys, "same.py", "--no-report", "--no-cache")
    with_stdin(monkeypatch, text)
    assert run(capsys, "-", "--stdin-filename", "same.py") == as_file
    assert as_file[0] == {CLEAN: 0, SYNC: 1}.get(text, 0)


def test_stdin_takes_the_config_and_per_file_ignores_its_name_finds(project, capsys, monkeypatch):
    (project / "bench").mkdir()
    (project / "bench" / "pyproject.toml").write_text('[tool.verify-perf]\nper-file-ignores = { "slow_*.py" = ["VP203"] }\n')
    with_stdin(monkeypatch, SYNC)
    assert run(capsys, "-", "--stdin-filename", "bench/slow_loop.py", "--select", "VP203", "-q") == (0, "", "")
    with_stdin(monkeypatch, SYNC)
    code, out, _ = run(capsys, "-", "--stdin-filename", "bench/fast_loop.py", "--select", "VP203", "-q")
    assert (code, out) == (1, f"bench/fast_loop.py:7:5: VP203 [HIGH] {FINDING.split('[HIGH] ')[1]}\n")


def test_stdin_takes_heat_from_the_project(project, capsys, monkeypatch):
    # The helper is step code only because train.py's loop calls it: the same answer as for the file.
    (project / "pyproject.toml").write_text("[tool.verify-perf]\n")
    (project / "train.py").write_text("from helpers import wait\n\nfor batch in loader:\n    optimizer.step()\n    wait()\n")
    helper = "import torch\n\ndef wait():\n    torch.cuda.synchronize()\n"
    (project / "helpers.py").write_text("")
    with_stdin(monkeypatch, helper)
    code, out, _ = run(capsys, "-", "--stdin-filename", "helpers.py", "--select", "VP203", "-q")
    assert (code, out.split(":")[:3]) == (1, ["helpers.py", "4", "5"])


def test_stdin_json_fingerprints_come_from_its_text(project, capsys, monkeypatch):
    with_stdin(monkeypatch, SYNC)
    from_stdin = json.loads(run(capsys, "-", "--stdin-filename", "train.py", "--format", "json")[1])
    on_disk = json.loads(run(capsys, "train.py", "--format", "json", "--no-report", "--no-cache")[1])
    assert [f["fingerprint"] for f in from_stdin["findings"]] == [f["fingerprint"] for f in on_disk["findings"]]


def test_stdin_report_only_when_asked_for(project, capsys, monkeypatch):
    with_stdin(monkeypatch, SYNC)
    assert run(capsys, "-", "--stdin-filename", "train.py", "--report-dir", "out", "-q")[0] == 1
    report = (project / "out" / "train.md").read_text()
    assert "verify-perf - --stdin-filename train.py" in report


@pytest.mark.parametrize(("argv", "message"), [
    (["-"], "`-` reads the source from standard input: name its file with --stdin-filename NAME.py "
            "(findings are reported under that name, and configuration is found from it)"),
    (["-", "train.py", "--stdin-filename", "x.py"], "`-` (standard input) cannot be combined with other paths"),
    (["train.py", "--stdin-filename", "x.py"],
     "--stdin-filename names the source read from standard input: give `-` (or no PATH) with it"),
    (["-", "--stdin-filename", "notes.txt"], "--stdin-filename notes.txt: not a Python file name (expected a .py or .ipynb name)"),
    (["-", "--stdin-filename", "."], "--stdin-filename .: a folder, not a file name"),
    (["-", "--stdin-filename", "x.py", "--diff", "HEAD"], "--diff works on files in the work tree; it cannot take standard input"),
    (["-", "--stdin-filename", "x.py", "--add-noqa"], "--add-noqa works on files in the work tree; it cannot take standard input"),
])
def test_stdin_usage_errors(project, capsys, monkeypatch, argv, message):
    with_stdin(monkeypatch, SYNC)
    assert run(capsys, *argv) == (2, "", f"verify-perf: error: {message}\n")


def test_stdin_over_the_size_limit_is_not_analysed_and_blocks(project, capsys, monkeypatch):
    with_stdin(monkeypatch, "x = 1\n" * 400)
    assert run(capsys, "-", "--stdin-filename", "big.py", "--max-file-size", "1KiB", "-q") == (1, (
        "big.py:1:1: VP900 [HIGH] not analysed: standard input holds more than the limit of 1 KiB (max-file-size)\n"
    ), "")


def test_stdin_from_a_pipe_in_a_real_process(project):
    completed = subprocess.run(
        [sys.executable, "-m", "verifier", "-", "--stdin-filename", "train.py", "-q", "--select", "VP203"],
        input=SYNC.encode(), capture_output=True, cwd=project, check=False,
    )
    assert (completed.returncode, completed.stdout.decode(), completed.stderr.decode()) == (1, f"{FINDING}\n", "")
