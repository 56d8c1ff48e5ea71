"""`-o` and reports write only what they may: regular files verify-perf wrote and nobody changed
since (its record in the folder says so; never a guess from what the lines look like), empty
ones, or with --force; never the markdown report's own file; streams for terminals, /dev/null,
read FIFOs and the descriptors `/dev/stdout` and the like name, never a replaced link or device.
Every target is checked before anything is written: a refused `-o` writes no report either."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
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


LOOKALIKES = {
    "indented": "    my own notes, indented\n",
    "found": "Found a bug in the data loader\n",
    "score": "Score: 3 goals to 1\n",
    "decision": "Decision: postpone the release\n",
    "annotation": "::error file=train.py,line=3::my own annotation\n",
    "statistics": "2\tVP201\tsync-in-hot-loop\tstep\t2 HIGH\n",
    "copied-report": "# Performance Verification Report - train\n\n| Verifier | verify-perf 0.1.0 |\nmy edits\n",
    "copied-json": '{"tool": {"name": "verify-perf"}, "my": "data"}\n',
}


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("name", LOOKALIKES)
def test_a_file_that_only_looks_like_output_is_never_replaced(project, capsys, name, fmt):
    (project / "notes.txt").write_text(LOOKALIKES[name])
    assert run("--format", fmt, "-o", "notes.txt", "--no-report") == 2
    assert one_error_line(capsys) == (
        "verify-perf: error: refusing to replace notes.txt: verify-perf did not write it "
        "(pass --force to replace it, or choose another file)"
    )
    assert (project / "notes.txt").read_text() == LOOKALIKES[name]


def test_an_output_edited_since_verify_perf_wrote_it_is_the_users(project, capsys):
    assert run("--format", "json", "-o", "out.json", "--no-report") == 0
    document = json.loads((project / "out.json").read_text())
    document["my_notes"] = "reviewed with the team on Monday"  # still verify-perf's JSON to the eye
    (project / "out.json").write_text(json.dumps(document))
    edited = (project / "out.json").read_text()
    assert run("--format", "json", "-o", "out.json", "--no-report") == 2
    assert (project / "out.json").read_text() == edited
    assert run("--format", "json", "-o", "out.json", "--no-report", "--force") == 0
    assert json.loads((project / "out.json").read_text())["tool"]["name"] == "verify-perf"


def test_the_record_lists_what_was_written_with_its_digest(project, capsys):
    assert run("--format", "github", "-o", "out/annotations.txt", "--no-report") == 0
    assert run() == 0
    written = (project / "out" / "annotations.txt").read_bytes()
    record = json.loads((project / "out" / ".verify-perf-outputs").read_text())
    assert record["files"] == {"annotations.txt": hashlib.sha256(written).hexdigest()}
    report = (project / "reports" / "train.md").read_bytes()
    assert json.loads((project / "reports" / ".verify-perf-outputs").read_text())["files"] == {
        "train.md": hashlib.sha256(report).hexdigest()
    }
    capsys.readouterr()
    assert run("-o", "out/.verify-perf-outputs", "--no-report", "--force") == 2
    assert one_error_line(capsys) == (
        "verify-perf: error: cannot write out/.verify-perf-outputs: it is verify-perf's record of the files it wrote "
        "in that folder"
    )


def test_a_record_that_is_not_verify_perfs_is_never_read_or_replaced(project, capsys):
    (project / ".verify-perf-outputs").write_text('{"files": {"notes.txt": "' + "0" * 64 + '"}}\n')
    (project / "notes.txt").write_text(HAND_WRITTEN)
    assert run("-o", "notes.txt", "--no-report") == 2
    assert run("-o", "new.txt", "--no-report") == 0
    assert (project / ".verify-perf-outputs").read_text() == '{"files": {"notes.txt": "' + "0" * 64 + '"}}\n'
    assert (project / "notes.txt").read_text() == HAND_WRITTEN


@pytest.mark.parametrize("named", ["reports/train.md", "./reports/train.md", "{project}/reports/train.md", "report-link.md"])
def test_o_onto_the_reports_own_file_is_refused(project, capsys, named):
    assert run() == 0
    capsys.readouterr()
    report = project / "reports" / "train.md"
    before = report.read_text()
    (project / "report-link.md").symlink_to(report)
    named = named.format(project=project)
    assert run("--format", "json", "-o", named) == 2
    assert one_error_line(capsys) == (
        f"verify-perf: error: -o {named} is the markdown report's own file: choose another file for the json "
        "output, or pass --no-report or --report-dir DIR (--force writes only the -o output there)"
    )
    assert report.read_text() == before
    assert run("--format", "json", "-o", named, "--force") == 0
    assert json.loads(report.read_text())["tool"]["name"] == "verify-perf"


def test_a_refused_o_writes_no_report(project, capsys):
    (project / "notes.txt").write_text(HAND_WRITTEN)
    assert run("--format", "json", "-o", "notes.txt") == 2
    assert not (project / "reports").exists()
    (project / "reports").mkdir()
    (project / "reports" / "train.md").write_text(HAND_WRITTEN)
    assert run("--format", "json", "-o", "out.json") == 2  # a refused report writes no -o file either
    assert not (project / "out.json").exists()


def test_an_empty_output_name_is_a_usage_error(project, capsys):
    assert run("-o", "", "--no-report") == 2
    assert one_error_line(capsys) == "verify-perf: error: an output file name is empty (use - for standard output)"
    assert capsys.readouterr().out == ""


def cli(cwd: Path, *argv: str, **kwargs) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "verifier", "train.py", "--isolated", "--no-cache", "--no-report", *argv]
    return subprocess.run(command, cwd=cwd, **kwargs)


@pytest.mark.parametrize("named", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_writes_to_the_pipe_it_names(project, named):
    if not os.path.exists(named):
        pytest.skip(f"no {named} here")
    completed = cli(project, "--format", "json", "-o", named, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["tool"]["name"] == "verify-perf"


def test_dev_stdout_redirected_to_a_file_is_written_where_it_stands(project):
    """`> out.txt` opened the file already: written through that descriptor (after what the shell
    wrote there), never replaced by a new file behind its back."""
    out = project / "out.txt"
    with open(out, "w") as handle:
        handle.write("before\n")
        handle.flush()
        completed = cli(project, "--format", "json", "-o", "/dev/stdout", stdout=handle, stderr=subprocess.PIPE, text=True)
        handle.write("after\n")
    assert completed.returncode == 0, completed.stderr
    text = out.read_text()
    assert text.startswith("before\n{") and text.endswith("}\nafter\n")


def test_dev_stderr_writes_to_standard_error(project):
    completed = cli(project, "--format", "json", "-o", "/dev/stderr", capture_output=True, text=True)
    assert completed.returncode == 0
    assert completed.stdout == ""
    assert json.loads(completed.stderr)["tool"]["name"] == "verify-perf"


def test_an_unopened_descriptor_is_a_usage_error(project):
    completed = cli(project, "-o", "/dev/fd/9", capture_output=True, text=True)
    assert completed.returncode == 2
    assert completed.stderr == "verify-perf: error: cannot write /dev/fd/9: Bad file descriptor\n"


@pytest.mark.parametrize("named", ["./reports/train.md", "reports//train.md", "{project}/reports/train.md",
                                   "../{name}/reports/train.md", "report-link.md"])
def test_o_onto_the_reports_own_file_is_refused_before_the_report_exists(project, capsys, named):
    # Compared as spelt, two names of a file not there yet differed: the JSON and the report both
    # went to reports/train.md, one replacing the other.
    (project / "report-link.md").symlink_to("reports/train.md")
    named = named.format(project=project, name=project.name)
    assert run("--format", "json", "-o", named) == 2
    assert "is the markdown report's own file" in one_error_line(capsys)
    assert not (project / "reports").exists()


def test_a_name_ending_with_a_slash_is_refused_before_any_work(project, capsys):
    assert run("-o", "out.json/") == 2
    assert one_error_line(capsys) == "verify-perf: error: cannot write out.json/: a name ending with / is a folder, not a file"
    assert sorted(p.name for p in project.iterdir()) == ["train.py"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_output_that_fails_when_written_leaves_no_report(project, capsys):
    assert run("-o", "/dev/full") == 2
    assert one_error_line(capsys) == "verify-perf: error: cannot write /dev/full: No space left on device"
    assert not (project / "reports").exists()
