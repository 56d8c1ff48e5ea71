"""VP900's documentation says what the gate does with each kind of file it could not analyse,
and a run over one file of each kind does exactly that (severity, line, message, exit code)."""

from __future__ import annotations

import json
import os
import socket

import pytest

from verifier.cli import main

CRASH = "import torch\nOK = " + " and ".join(["True"] * 10_000) + "\n"  # valid Python; libcst's parser dies on it


def test_the_rule_documents_both_severities(capsys):
    assert main(["rule", "VP900"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "# unanalysable-file (VP900)"
    assert lines[2] == "Category: Analysis. Severity by heat: step: HIGH, eval: HIGH, epoch: HIGH, once: HIGH."
    what = lines[lines.index("## What it does") + 1]
    why = lines[lines.index("## Why is this bad?") + 1]
    assert 'a severity configured for the rule (`severity = { VP900 = "HIGH" }`) applies to every VP900' in why
    for reason in ("the parser crashed", "rejected code that Python accepts", "--file-timeout", "max-file-size", "could not be read", "is HIGH",
                   "a syntax error", "do not decode", "not a regular file", "it is INFO", 'unanalysable = "warn"'):
        assert reason in what, reason
    assert main(["rule", "unanalysable-file", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["code"], record["severity"]) == ("VP900", {"step": "HIGH", "eval": "HIGH", "epoch": "HIGH", "once": "HIGH"})


@pytest.fixture
def kinds(tmp_path, monkeypatch):
    """One file for each reason the documentation names, in a project of its own."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    (src / "syntax.py").write_text("import torch\ndef train(:\n    pass\n")
    (src / "latin1.py").write_bytes(b"import torch\nname = 'caf\xe9'\n")
    (src / "crash.py").write_text(CRASH)
    (src / "large.py").write_text("import torch\n" + "x = 1\n" * 25_000)  # 150,013 bytes
    os.mkfifo(src / "pipe.py")
    server = socket.socket(socket.AF_UNIX)
    server.bind("src/sock.py")
    yield src
    server.close()


EXPECTED = [
    ("src/crash.py", 1, "HIGH", "the parser crashed (SIGSEGV): the code is nested too deeply or too complex for it"),
    ("src/large.py", 1, "HIGH", "not analysed: the file is 146.5 KiB, over the limit of 128 KiB (max-file-size)"),
    ("src/latin1.py", 2, "INFO", "cannot decode file as utf-8: invalid continuation byte"),
    ("src/pipe.py", 1, "INFO", "not read: it is a FIFO, not a regular file"),
    ("src/sock.py", 1, "INFO", "not read: it is a socket, not a regular file"),
    ("src/syntax.py", 2, "INFO", "syntax error: invalid syntax"),
]


def run(capsys, *argv) -> tuple[int, list[tuple[str, int, str, str]]]:
    code = main(["src", "--isolated", "--no-cache", "--no-report", "--format", "json", "--max-file-size", "128KiB", *argv])
    report = json.loads(capsys.readouterr().out)
    return code, [(f["path"], f["line"], f["severity"], f["message"]) for f in report["findings"]]


def test_each_documented_reason_has_its_severity(kinds, capsys):
    assert run(capsys) == (1, EXPECTED)


def test_warn_makes_the_blocking_ones_info(kinds, capsys):
    (kinds.parent / "pyproject.toml").write_text('[tool.verify-perf]\nunanalysable = "warn"\nmax-file-size = "128KiB"\n')
    code = main(["src", "--no-cache", "--no-report", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    found = [(f["path"], f["line"], f["severity"], f["message"]) for f in report["findings"]]
    assert (code, found) == (0, [(path, line, "INFO", message) for path, line, _, message in EXPECTED])


def test_ignoring_the_rule_reports_none_of_them(kinds, capsys):
    assert run(capsys, "--ignore", "VP900") == (0, [])
