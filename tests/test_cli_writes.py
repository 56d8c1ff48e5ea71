"""`-o` and reports write only what they may: regular files verify-perf wrote (or empty ones, or
with --force), streams for terminals, /dev/null and read FIFOs, never a replaced link or device."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from verifier.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HAND_WRITTEN = "# My notes\n\nDo not lose me.\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "good_train.py", tmp_path / "train.py")
    return tmp_path


def run(*argv) -> int:
    return main(["train.py", "--isolated", "--no-cache", "--date", "2030-01-01", *argv])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_hand_written_report_is_never_replaced_without_force(project, capsys):
    report = project / "reports" / "train.md"
    report.parent.mkdir()
    report.write_text(HAND_WRITTEN)
    assert run() == 2
    assert one_error_line(capsys) == (
        "verify-perf: error: refusing to replace reports/train.md: verify-perf did not write it "
        "(pass --force to replace it, or choose another file)"
    )
    assert report.read_text() == HAND_WRITTEN
    assert run("--force") == 0
    assert report.read_text().startswith("# Performance Verification Report - train")
    assert run() == 0  # now it is verify-perf's own: replaced on every run


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown"])
def test_every_format_replaces_its_own_output(project, capsys, fmt):
    assert run("--format", fmt, "-o", "out.txt", "--no-report") == 0
    first = (project / "out.txt").read_bytes()
    assert run("--format", fmt, "-o", "out.txt", "--no-report") == 0
    assert (project / "out.txt").read_bytes() == first
    (project / "other.txt").write_text(HAND_WRITTEN)
    assert run("--format", fmt, "-o", "other.txt", "--no-report") == 2
    assert (project / "other.txt").read_text() == HAND_WRITTEN


def test_dash_is_standard_output(project, capsys):
    assert run("--format", "json", "-o", "-", "--no-report") == 0
    assert json.loads(capsys.readouterr().out)["tool"]["name"] == "verify-perf"
    assert not (project / "-").exists()


def test_a_symlink_is_written_through_never_replaced(project, capsys):
    (project / "real.json").write_text("")
    (project / "link.json").symlink_to(project / "real.json")
    assert run("--format", "json", "-o", "link.json", "--no-report") == 0
    assert (project / "link.json").is_symlink()
    assert json.loads((project / "real.json").read_text())["tool"]["name"] == "verify-perf"
    (project / "notes.md").write_text(HAND_WRITTEN)
    (project / "notes-link.md").symlink_to(project / "notes.md")
    assert run("--format", "json", "-o", "notes-link.md", "--no-report") == 2
    assert (project / "notes-link.md").is_symlink() and (project / "notes.md").read_text() == HAND_WRITTEN


def test_a_directory_is_refused(project, capsys):
    (project / "out").mkdir()
    assert run("-o", "out", "--no-report") == 2
    assert one_error_line(capsys) == "verify-perf: error: cannot write out: it is a directory"
    assert list((project / "out").iterdir()) == []


def test_a_fifo_is_streamed_to_its_reader_and_refused_without_one(project, capsys):
    fifo = project / "pipe"
    os.mkfifo(fifo)
    assert run("--format", "json", "-o", "pipe", "--no-report") == 2
    assert one_error_line(capsys) == "verify-perf: error: cannot write pipe: it is a FIFO that no process is reading"
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that is there already
    try:
        assert run("--format", "json", "-o", "pipe", "--no-report") == 0
        received = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert json.loads(received)["tool"]["name"] == "verify-perf"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_is_written_not_replaced(project, capsys):
    assert run("-o", os.devnull, "--no-report") == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(project, capsys):
    previous = os.umask(0o027)
    try:
        assert run("--format", "json", "-o", "new.json", "--no-report") == 0
        assert stat.S_IMODE(os.stat(project / "new.json").st_mode) == 0o640
        os.chmod(project / "new.json", 0o600)
        assert run("--format", "json", "-o", "new.json", "--no-report") == 0
        assert stat.S_IMODE(os.stat(project / "new.json").st_mode) == 0o600
    finally:
        os.umask(previous)
