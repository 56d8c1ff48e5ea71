"""Issue 14's acceptance run: bad_train.py among hostile files, under a 2 GiB memory cap.

The run must finish within its budget, report every finding of bad_train.py, give each file it
could not analyse exactly one VP900, and exit 1. Two of the files the issue lists turned out to
be analysable once parsing is isolated: the 500-branch `elif` chain is valid Python (it now gets
its own finding instead of a RecursionError), and a file name that is not UTF-8 is only a name
(this one's content is not UTF-8 either, which is its VP900). The 1,500 unclosed brackets are not
valid Python (Python stops at 200 levels), so their VP900 is Python's syntax error at its line,
INFO; the 10,000-term `and` is valid, and its parser crash blocks.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MEMORY_CAP = 2 << 30
BUDGET_SECONDS = 60


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_json(folder: Path, *extra: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-m", "verifier", str(folder), "--format", "json", "--no-report", "--isolated", *extra],
        capture_output=True, timeout=BUDGET_SECONDS * 2, preexec_fn=_cap_memory, cwd=folder.parent,
    )
    return completed.returncode, json.loads(completed.stdout.decode("utf-8")), time.monotonic() - started


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_hostile_folder_under_a_memory_cap(tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    shutil.copy(EXAMPLES / "bad_train.py", folder / "bad_train.py")
    (folder / "brackets.py").write_text("import torch\nx = " + "(" * 1500 + "\n")
    (folder / "and_chain.py").write_text("import torch\nOK = " + " and ".join(["True"] * 10_000) + "\n")
    (folder / "elif_chain.py").write_text(
        "import torch\n\n\ndef train(model, loader, optimizer, x):\n    for batch in loader:\n"
        "        loss = model(batch.cuda(non_blocking=True)).sum()\n        loss.backward()\n"
        "        optimizer.step()\n        if x == 0:\n            pass\n"
        + "".join(f"        elif x == {i}:\n            pass\n" for i in range(1, 500))
        + "        print(loss.item())\n"
    )
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.py"), "wb") as handle:
        handle.write(b"import torch\n# caf\xe9 in latin-1, without a coding cookie\n")
    os.mkfifo(folder / "pipe")
    (folder / "pipe.py").symlink_to(folder / "pipe")

    code, report, seconds = run_json(folder)
    assert code == 1
    assert seconds < BUDGET_SECONDS

    _, alone, _ = run_json(EXAMPLES / "bad_train.py")
    fields = ("line", "column", "code", "severity", "message")
    mine = [tuple(f[k] for k in fields) for f in report["findings"] if f["path"].endswith("/bad_train.py")]
    assert mine == [tuple(f[k] for k in fields) for f in alone["findings"]]

    others = [(os.path.basename(f["path"]), f["code"], f["severity"], f["line"]) for f in report["findings"]
              if not f["path"].endswith("/bad_train.py")]
    assert sorted(others) == [
        ("and_chain.py", "VP900", "HIGH", 1),
        ("brackets.py", "VP900", "INFO", 2),
        ("caf\udce9.py", "VP900", "INFO", 2),
        ("elif_chain.py", "VP201", "MEDIUM", 1009),
        ("elif_chain.py", "VP306", "INFO", 5),
        ("pipe.py", "VP900", "INFO", 1),
    ]
    messages = {os.path.basename(f["path"]): f["message"] for f in report["findings"] if f["code"] == "VP900"}
    assert messages["brackets.py"] == "syntax error: too many nested parentheses"
    assert messages["and_chain.py"].startswith("the parser crashed (SIGSEGV)")
    assert messages["pipe.py"] == "not read: it is a FIFO, not a regular file"
    assert messages["caf\udce9.py"].startswith("cannot decode file as utf-8")


def test_bad_train_with_a_500_term_and_exits_1(tmp_path):
    text = (EXAMPLES / "bad_train.py").read_text() + "\nOK = " + " and ".join(["True"] * 500) + "\n"
    (tmp_path / "bad_train.py").write_text(text)
    code, report, _ = run_json(tmp_path / "bad_train.py")
    assert code == 1
    assert [f for f in report["findings"] if f["code"] == "VP900"] == []
