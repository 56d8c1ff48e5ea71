"""Issue 14's acceptance for `-o`, run as a user without special rights (as `nobody` when the
suite runs as root): a FIFO, a link to a file, a directory, a file this user may not write and a
report folder that is a dangling link are refused with exit 2 and left exactly as they were."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HAND_WRITTEN = "# My notes\n\nDo not lose me.\n"


def _as_user() -> list[str] | None:
    """How to run verify-perf without root's rights, or None when that is not possible here
    (no setpriv, or a checkout in a folder that `nobody` cannot read, e.g. under `mktemp -d`)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import verifier.cli"], capture_output=True, cwd="/")
    return prefix if probe.returncode == 0 else None


PREFIX = _as_user()
pytestmark = pytest.mark.skipif(
    PREFIX is None or not hasattr(os, "mkfifo"),
    reason="needs FIFOs and a user without root's rights who can run this checkout",
)


@pytest.fixture
def project():
    # Not under pytest's own temporary folder: the other user must be able to reach it by its path.
    folder = Path(tempfile.mkdtemp(prefix="verify-perf-writes-"))
    os.chmod(folder, 0o777)
    shutil.copy(EXAMPLES / "good_train.py", folder / "train.py")
    os.chmod(folder / "train.py", 0o644)
    yield folder
    shutil.rmtree(folder)


def run(folder: Path, *argv: str) -> tuple[int, str]:
    completed = subprocess.run(
        [*PREFIX, sys.executable, "-m", "verifier", "train.py", "--isolated", "--no-cache", *argv],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )
    return completed.returncode, completed.stderr


def snapshot(path: Path) -> tuple:
    status = os.lstat(path)
    content = path.read_text() if stat.S_ISREG(status.st_mode) else None
    return status.st_ino, stat.S_IFMT(status.st_mode), stat.S_IMODE(status.st_mode), status.st_uid, content


def test_a_fifo_without_a_reader_is_refused_and_stays_a_fifo(project):
    os.mkfifo(project / "pipe")
    os.chmod(project / "pipe", 0o666)
    before = snapshot(project / "pipe")
    assert run(project, "--no-report", "-o", "pipe") == (2, "verify-perf: error: cannot write pipe: it is a FIFO that no process is reading\n")
    assert snapshot(project / "pipe") == before


def test_a_link_to_a_hand_written_file_is_refused_and_both_stay(project):
    (project / "notes.md").write_text(HAND_WRITTEN)
    os.chmod(project / "notes.md", 0o666)
    (project / "link.md").symlink_to("notes.md")
    before = snapshot(project / "notes.md"), os.readlink(project / "link.md")
    assert run(project, "--no-report", "-o", "link.md") == (
        2, "verify-perf: error: refusing to replace link.md: verify-perf did not write it (pass --force to replace it, or choose another file)\n"
    )
    assert (snapshot(project / "notes.md"), os.readlink(project / "link.md")) == before


def test_a_directory_is_refused(project):
    (project / "out").mkdir()
    assert run(project, "--no-report", "-o", "out") == (2, "verify-perf: error: cannot write out: it is a directory\n")
    assert list((project / "out").iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs a file owned by another user")
@pytest.mark.parametrize("force", [False, True])
def test_a_file_this_user_may_not_write_is_refused_even_in_a_writable_folder(project, force):
    # verify-perf's own earlier output, so only the permission stands in the way; a rename in this
    # writable folder could replace it, as `> report.txt` in a shell could not.
    assert subprocess.run([sys.executable, "-m", "verifier", "train.py", "--isolated", "--no-cache",
                           "--no-report", "-o", "report.txt"], cwd=project, capture_output=True).returncode == 0
    before = snapshot(project / "report.txt")
    code, err = run(project, "--no-report", "-o", "report.txt", *(["--force"] if force else []))
    assert (code, err) == (
        2, "verify-perf: error: cannot write report.txt: Permission denied (the file is not writable for this user)\n"
    )
    assert snapshot(project / "report.txt") == before


def test_a_report_folder_that_is_a_dangling_link_is_refused(project):
    (project / "reports").symlink_to(project / "gone")
    code, err = run(project)
    assert (code, err) == (
        2, f"verify-perf: error: cannot write reports/train.md: {project}/reports is not a folder "
        "(a file, or a link to a missing folder)\n"
    )
    assert not (project / "gone").exists()
