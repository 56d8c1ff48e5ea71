"""Standard output closed, full or a pipe whose reader has gone, and a working directory deleted
under the shell: handled as ruff does, in a real process (the interpreter's own flush at exit
is part of what is tested), with the exit code and the one line on stderr exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TRAIN = (
    "import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
    "        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n        torch.cuda.synchronize()\n"
)
CHECK = ["train.py", "--isolated", "--no-cache", "--no-report"]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def verify_perf(folder, *argv, stdout=None, before=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verifier", *argv], cwd=folder, stdout=stdout, stderr=subprocess.PIPE,
        preexec_fn=before, text=True, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)}, timeout=120,
    )


def with_reader_gone(folder, *argv) -> tuple[int, str]:
    """Run with standard output a pipe that nobody reads any more (`| head` once it has quit)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "verifier", *argv], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)},
    )
    process.stdout.close()
    error = process.stderr.read().decode()
    return process.wait(timeout=120), error


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_reader_that_has_gone_ends_the_output_quietly_and_the_gate_still_blocks(project, output_format):
    assert with_reader_gone(project, *CHECK, "--format", output_format) == (1, "")


def test_a_reader_that_has_gone_ends_the_rule_documentation_quietly(project):
    assert with_reader_gone(project, "rule", "--all") == (0, "")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [CHECK, ["rule", "--all"], ["rule", "VP201"], [*CHECK, "--show-files"]],
                         ids=["check", "rules", "one-rule", "show-files"])
def test_a_full_device_is_one_line_and_exit_2(project, argv):
    with open("/dev/full", "w") as full:
        completed = verify_perf(project, *argv, stdout=full)
    assert (completed.returncode, completed.stderr) == (2, "verify-perf: error: cannot write standard output: No space left on device\n")


def test_a_closed_standard_output_is_one_line_and_exit_2(project):
    completed = verify_perf(project, *CHECK, before=lambda: os.close(1))
    assert (completed.returncode, completed.stderr) == (
        2, "verify-perf: error: standard output is closed: nowhere to write the text output "
           "(write it to a file with -o FILE)\n",
    )


def test_with_standard_output_closed_the_output_goes_to_the_file_named(project):
    completed = verify_perf(project, *CHECK, "-o", "findings.txt", before=lambda: os.close(1))
    assert (completed.returncode, completed.stderr) == (1, "")
    assert "train.py:9:9: VP203 [HIGH]" in (project / "findings.txt").read_text()


def test_a_deleted_working_directory_is_one_line_and_exit_2(project):
    gone = project / "gone"
    gone.mkdir()

    def enter_and_delete():
        os.chdir(gone)
        os.rmdir(gone)

    completed = verify_perf(project, str(project / "train.py"), "--no-cache", before=enter_and_delete)
    assert (completed.returncode, completed.stderr) == (
        2, "verify-perf: error: the working directory is gone (No such file or directory): it was deleted or "
           "moved; change to an existing folder and run again\n",
    )


@pytest.mark.parametrize(("option", "what"), [("--help", "help"), ("--version", "version")])
def test_help_and_version_meet_standard_output_as_every_output_does(project, option, what):
    # argparse dropped the failed write: exit 0 with nothing said, or Python's "Exception
    # ignored" and status 120 at exit.
    assert with_reader_gone(project, option) == (0, "")
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            completed = verify_perf(project, option, stdout=full)
        assert (completed.returncode, completed.stderr) == (
            2, "verify-perf: error: cannot write standard output: No space left on device\n")
    completed = verify_perf(project, option, before=lambda: os.close(1))
    assert (completed.returncode, completed.stderr) == (
        2, f"verify-perf: error: standard output is closed: nowhere to write the {what} (redirect it to a file)\n")
    completed = verify_perf(project, option, stdout=subprocess.PIPE)
    assert completed.returncode == 0 and completed.stdout.startswith("usage: verify-perf" if what == "help" else "verify-perf 0.1.0")


def test_json_and_sarif_are_utf_8_whatever_the_terminal_encoding(project):
    # With an ASCII or Latin-1 standard output, `é` came out as `\xe9`: no JSON at all.
    (project / "café.py").write_text(TRAIN)
    for encoding in ("ascii", "latin-1"):
        env = {**os.environ, "PYTHONIOENCODING": encoding, "GIT_CEILING_DIRECTORIES": str(project.parent)}
        for fmt in ("json", "sarif"):
            completed = subprocess.run(
                [sys.executable, "-m", "verifier", "café.py", "--isolated", "--no-cache", "--no-report", "--format", fmt],
                cwd=project, capture_output=True, env=env, timeout=120,
            )
            assert completed.returncode == 1, completed.stderr
            document = json.loads(completed.stdout.decode("utf-8"))
            if fmt == "json":
                assert document["files"] == ["café.py"]
            else:
                location = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
                assert location["artifactLocation"]["uri"] == "caf%C3%A9.py"


def test_the_rules_documentation_reaches_an_ascii_terminal(project):
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    completed = subprocess.run([sys.executable, "-m", "verifier", "rule", "--all"], capture_output=True, env=env,
                               cwd=project, timeout=120)
    assert (completed.returncode, completed.stderr) == (0, b"")
    assert b"\\xb5s" in completed.stdout  # `µs`, escaped
