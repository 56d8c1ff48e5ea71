"""`python -m verifier` is as safe as the console script: nothing is imported from the working
directory, which is the project being analysed (a `json.py` there must never run)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SHADOWED = (
    "argparse", "ast", "ctypes", "dataclasses", "datetime", "enum", "fnmatch", "hashlib", "jinja2", "json",
    "libcst", "multiprocessing", "re", "rich", "secrets", "shlex", "signal", "subprocess", "tempfile",
    "textwrap", "tokenize", "tomllib", "typing", "verifier_rules", "warnings",
)


def test_modules_in_the_working_directory_are_never_imported(tmp_path):
    for name in SHADOWED:
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / ('RAN_' + name))!r}, 'w').close()\nraise SystemExit(9)\n")
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "bad_train.py")
    for argv in (["bad_train.py", "--no-cache", "-j", "2"], ["bad_train.py", "--format", "json"], ["rule", "VP201"]):
        completed = subprocess.run(
            [sys.executable, "-m", "verifier", *argv, "--no-report"] if argv[0] != "rule" else [sys.executable, "-m", "verifier", *argv],
            cwd=tmp_path, capture_output=True, text=True,
        )
        assert completed.returncode in (0, 1), completed.stderr
        assert sorted(p.name for p in tmp_path.glob("RAN_*")) == []
    assert "VP301" in subprocess.run(
        [sys.executable, "-m", "verifier", "bad_train.py", "--no-report", "-q"], cwd=tmp_path, capture_output=True, text=True
    ).stdout


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P is new in Python 3.11")
def test_dash_p_runs_the_real_tool_where_the_project_has_its_own_verifier_module(tmp_path):
    """What docs/usage.md advises for a project with a `verifier.py`: plain `-m` finds that module
    before any of verify-perf's code can run (Python's own lookup); `-P` never looks there."""
    (tmp_path / "verifier.py").write_text(f"open({str(tmp_path / 'RAN_verifier')!r}, 'w').close()\nraise SystemExit(9)\n")
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "bad_train.py")
    completed = subprocess.run(
        [sys.executable, "-P", "-m", "verifier", "bad_train.py", "--no-report", "--no-cache", "-q"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert completed.returncode == 1
    assert completed.stdout.splitlines()[0].startswith("bad_train.py:")
    assert not (tmp_path / "RAN_verifier").exists()


# Each starts as at a terminal (a test run started in the background ignores SIGINT, and so would
# every process it starts).
STARTING = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from verifier.startup import guard_startup
guard_startup()
os.kill(os.getpid(), signal.SIGINT)  # arrives while the tool is still importing its modules
import verifier.cli
print("not reached")
"""
RUNNING = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from verifier.startup import run
import verifier.check

def interrupted(args):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)

verifier.check.run_check = interrupted
sys.argv = ["verify-perf", "train.py", "--no-report"]
sys.exit(run())
"""


def test_ctrl_c_while_starting_is_one_line_and_exit_2_as_during_a_run(tmp_path):
    # It was Python's traceback of whichever import the signal hit, and status -2.
    (tmp_path / "train.py").write_text("import torch\n")
    for code in (STARTING, RUNNING):
        completed = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", "verify-perf: interrupted\n")


def test_an_interrupt_ignored_from_the_start_stays_ignored():
    code = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nfrom verifier.startup import guard_startup\n"
            "guard_startup()\nprint(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert completed.stdout == "True\n"


def test_an_interrupt_raised_while_a_module_builds_its_classes_still_exits_2(tmp_path):
    # dataclasses and namedtuples build methods with exec; CPython took a KeyboardInterrupt raised
    # there for an unhandled one and killed the process with SIGINT after main returned 2.
    code = (
        "import sys\nimport verifier.check\n"
        "def interrupted(args):\n    exec('raise KeyboardInterrupt')\n"
        "verifier.check.run_check = interrupted\n"
        "from verifier.startup import run\nsys.argv = ['verify-perf', 'train.py', '--no-report']\nsys.exit(run())\n"
    )
    (tmp_path / "train.py").write_text("import torch\n")
    # Run as `python -m` runs verify-perf: only that path ends through CPython's check of the mark.
    (tmp_path / "driver.py").write_text(code)
    completed = subprocess.run([sys.executable, "-m", "driver"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (completed.returncode, completed.stderr) == (2, "verify-perf: interrupted\n")
