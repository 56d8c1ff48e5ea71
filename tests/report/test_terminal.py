"""Text for people at a terminal (colour, a code frame under each finding) and plain text when
piped; with --baseline, new findings are marked in both."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.report.conftest import make_finding, make_report
from verifier.cli import main
from verifier.findings import Severity
from verifier.report.terminal import code_frame, render_terminal
from verifier.report.text import render_text

ANSI = re.compile(r"\x1b\[[0-9;]*m")
STEP = (
    "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"
    "    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n"
)
# Two reads in two statements (one statement gets one VP201): a batch element (not known to be a
# tensor: LOW) and the loss (a model output: MEDIUM).
SYNC = STEP + "    print(batch.item())\n    print(loss.item())\n"
TABS = (
    "import torch\n\nfor batch in loader:\n\ttorch.cuda.synchronize()\n"
    "\tloss = model(batch)\n\tloss.backward()\n\toptimizer.step()\n"
)


def test_the_code_frame_underlines_the_reported_columns():
    finding = make_finding("VP201", line=58, source="    if loss.item() < 1.0:", severity=Severity.MEDIUM)
    finding = finding.__class__(**{**finding.__dict__, "column": 8, "end_column": 19})
    assert [t.plain for t in code_frame(finding)] == [
        "   |",
        "58 |     if loss.item() < 1.0:",
        "   |        ^^^^^^^^^^^",
        "   |",
    ]


def test_a_multi_line_span_is_underlined_on_each_line():
    finding = make_finding("VP201", line=5, source="    print(batch.item(),\n          loss.item())")
    finding = finding.__class__(**{**finding.__dict__, "column": 5, "end_line": 6, "end_column": 23})
    assert [t.plain for t in code_frame(finding)][1:-1] == [
        "5 |     print(batch.item(),",
        "  |     ^^^^^^^^^^^^^^^^^^^",
        "6 |           loss.item())",
        "  |           ^^^^^^^^^^^^",
    ]


def test_terminal_output_has_colour_frames_and_the_same_summary():
    report = make_report([make_finding("VP301", line=71, severity=Severity.CRITICAL, source="        head_optimizer.step()")])
    styled = render_terminal(report, width=100)
    assert "\x1b[" in styled
    plain = ANSI.sub("", styled).splitlines()
    text = render_text(report).splitlines()
    assert plain[0] == text[0]
    assert plain[1:5] == ["   |", "71 |         head_optimizer.step()", "   |     ^^^^^^^^^^^^^^^", "   |"]
    assert plain[-3:] == text[-3:]


def test_the_command_line_styles_only_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    (tmp_path / "train.py").write_text(TABS)
    main(["train.py", "--no-report", "--no-cache"])
    piped = capsys.readouterr().out
    assert "\x1b[" not in piped and " | " not in piped
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    main(["train.py", "--no-report", "--no-cache"])
    styled = capsys.readouterr().out
    assert "\x1b[" in styled
    # A tab is expanded the same way on the source line and under it, so the carets line up.
    assert "4 |     torch.cuda.synchronize()\n  |     ^^^^^^^^^^^^^^^^^^^^^^^^\n" in ANSI.sub("", styled)
    monkeypatch.setenv("NO_COLOR", "1")
    main(["train.py", "--no-report", "--no-cache"])
    uncoloured = capsys.readouterr().out
    # NO_COLOR: no ANSI styling at all (no bold or dim either); the code frames stay.
    assert "\x1b" not in uncoloured
    assert "4 |     torch.cuda.synchronize()" in uncoloured
    main(["train.py", "--no-report", "--no-cache", "-o", "out.txt"])
    assert " | " not in (tmp_path / "out.txt").read_text()


@pytest.mark.parametrize(("tty", "env", "frames", "colour"), [
    (False, {}, False, False),
    (True, {}, True, True),
    (True, {"NO_COLOR": "1"}, True, False),
    (True, {"NO_COLOR": "0"}, True, False),  # any value but "" counts, as no-color.org says
    (True, {"NO_COLOR": ""}, True, True),
    (False, {"FORCE_COLOR": "1"}, True, True),
    (False, {"FORCE_COLOR": "0"}, True, True),  # any value but "", as force-color.org says
    (False, {"FORCE_COLOR": ""}, False, False),
    (False, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),  # NO_COLOR wins
    (True, {"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False),
])
def test_no_color_and_force_color(tmp_path, monkeypatch, capsys, tty, env, frames, colour):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    (tmp_path / "train.py").write_text(TABS)
    assert main(["train.py", "--no-report", "--no-cache", "--select", "VP203"]) == 1
    out = capsys.readouterr().out
    assert ("\x1b[" in out) is colour
    assert ("4 |     torch.cuda.synchronize()" in ANSI.sub("", out)) is frames
    assert ANSI.sub("", out).startswith("train.py:4:2: VP203 [HIGH] `synchronize()` in a loop blocks the host")
    # Styling is for text on standard output only: machine formats and files stay plain.
    for argv in (["--format", "json"], ["--statistics"], ["-q", "-o", "out.txt"]):
        assert main(["train.py", "--no-report", "--no-cache", "--select", "VP203", *argv]) == 1
        assert "\x1b" not in capsys.readouterr().out
    assert (tmp_path / "out.txt").read_text().startswith("train.py:4:2: VP203 [HIGH]")


def test_no_color_means_no_escape_in_a_real_process(tmp_path):
    (tmp_path / "train.py").write_text(TABS)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent), "FORCE_COLOR": "1", "NO_COLOR": "1"}
    piped = subprocess.run(
        [sys.executable, "-m", "verifier", "train.py", "--no-report", "--no-cache", "--select", "VP203"],
        cwd=tmp_path, capture_output=True, env=env, check=False,
    )
    assert piped.returncode == 1 and b"\x1b" not in piped.stdout and b" | " not in piped.stdout
    env.pop("NO_COLOR")
    forced = subprocess.run(
        [sys.executable, "-m", "verifier", "train.py", "--no-report", "--no-cache", "--select", "VP203"],
        cwd=tmp_path, capture_output=True, env=env, check=False,
    )
    assert forced.returncode == 1 and b"\x1b[" in forced.stdout and b"4 | " in ANSI.sub("", forced.stdout.decode()).encode()


@pytest.mark.parametrize("styled", [False, True])
def test_baseline_marks_new_findings(tmp_path, monkeypatch, capsys, styled):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(STEP)
    main(["train.py", "--no-report", "--format", "json", "-o", "base.json"])
    (tmp_path / "train.py").write_text(SYNC)
    if styled:
        monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    capsys.readouterr()
    main(["train.py", "--no-report", "--baseline", "base.json", "--select", "VP2"])
    lines = [line for line in ANSI.sub("", capsys.readouterr().out).splitlines() if line.startswith("train.py:")]
    assert lines == [
        # The loss read makes the synchronize a second wait: same finding, now LOW.
        "train.py:4:5: VP203 [LOW] `synchronize()` in a loop whose body already waits for the device at "
        "`loss.item()`: a second wait every iteration, which costs the launch gap after it",
        "train.py:8:11: VP201 [LOW] (new) `.item()` of `batch` in the per-step loop waits for the device every step",
        "train.py:9:11: VP201 [LOW] (new) `.item()` of `loss` in the per-step loop waits for the device every step",
    ]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs pseudo-terminals")
def test_a_pseudo_terminal_without_a_size_still_gets_every_line(tmp_path):
    # A fresh pseudo-terminal reports 0 columns (as under `script` or `docker run -t`); rich
    # prints nothing at width 0, which once made the gate silent on such terminals.
    (tmp_path / "train.py").write_text(TABS)
    leader, follower = os.openpty()
    assert os.get_terminal_size(follower).columns == 0
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent), "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "verifier", "train.py", "--no-report", "--no-cache", "-q", "--select", "VP203"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.DEVNULL, env=env,
    )
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 1
    lines = ANSI.sub("", received.decode()).replace("\r\n", "\n").splitlines()
    assert lines == ["train.py:4:2: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration"]


def test_the_code_frame_shows_control_characters_as_glyphs_that_keep_the_columns():
    finding = make_finding("VP201", line=3, source="    print('\x1b[2J', loss.item())", severity=Severity.MEDIUM)
    finding = finding.__class__(**{**finding.__dict__, "column": 22, "end_column": 33})
    assert [t.plain for t in code_frame(finding)] == [
        "  |",
        "3 |     print('\u241b[2J', loss.item())",
        "  |                      ^^^^^^^^^^^",
        "  |",
    ]
