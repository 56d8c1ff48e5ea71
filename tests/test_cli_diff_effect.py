"""Diff mode and the pre-commit hook judge a change by its effect (issue 24, item 1): a finding is
new when the merge base did not have it, or had it colder or less severe, wherever it is. The
merge base's findings come from its own tree, analysed like the work tree and cached by commit."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.git_repo import git
from verifier import diffbase
from verifier.cli import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

METRICS = """\
import torch


def log_loss(loss):
    return loss.detach()


def wait_for_device():
    torch.cuda.synchronize()
"""
TRAIN = """\
import torch
from metrics import log_loss{imports}


def train(model, loader, optimizer):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        log_loss(loss){calls}
"""
CALLS_IT = {"imports": ", wait_for_device", "calls": "\n        wait_for_device()"}
NOT_YET = {"imports": "", "calls": ""}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """Commit 1 adds an uncalled helper that synchronizes; nothing calls it yet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "metrics.py").write_text(METRICS)
    (tmp_path / "train.py").write_text(TRAIN.format(**NOT_YET))
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "commit 1: an uncalled helper")
    return tmp_path


def gate(capsys, *args) -> tuple[int, list[str]]:
    code = main([".", "--no-report", "--quiet", *args])
    return code, capsys.readouterr().out.splitlines()


HOT_HELPER = "metrics.py:9:5: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration"


def test_a_change_that_calls_an_unchanged_helper_every_step_reports_the_helper(repo, capsys):
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(repo, "commit", "-qam", "commit 2: call it every step")
    assert gate(capsys, "--diff", "HEAD~1") == (1, [HOT_HELPER])
    # What the change added in train.py itself was there before (the loop's own findings): not new.
    assert gate(capsys, "--diff", "HEAD") == (0, [])


def test_the_pre_commit_hook_gives_the_same_answer_as_diff(repo, capsys):
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(repo, "add", "train.py")  # staged, about to be committed: what the hook sees
    assert gate(capsys, "--diff", "HEAD") == (1, [HOT_HELPER])


def test_a_finding_made_hotter_by_the_change_is_new(repo, capsys):
    once_per_epoch = (
        "import torch\nfrom metrics import log_loss, wait_for_device\n\n\n"
        "def train(model, loader, optimizer):\n    model.cuda()\n    for epoch in range(10):\n"
        "        wait_for_device()\n        for x in loader:\n            loss = model(x.cuda()).sum()\n"
        "            loss.backward()\n            optimizer.step()\n            log_loss(loss)\n"
    )
    (repo / "train.py").write_text(once_per_epoch)
    git(repo, "commit", "-qam", "synchronize once per epoch")
    assert gate(capsys, "--diff", "HEAD") == (0, [])
    full = main([".", "--no-report", "--format", "json", "--select", "VP203"])
    assert [(f["path"], f["heat"], f["severity"]) for f in json.loads(capsys.readouterr().out)["findings"]] == [
        ("metrics.py", "epoch", "MEDIUM")
    ]
    assert full == 0
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    assert gate(capsys, "--diff", "HEAD") == (1, [HOT_HELPER])


def test_code_moved_within_its_file_is_not_new(repo, capsys):
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(repo, "commit", "-qam", "call it every step")
    moved = METRICS.replace("def log_loss(loss):\n    return loss.detach()\n\n\n", "") + (
        "\n\ndef log_loss(loss):\n    return loss.detach()\n"
    )
    (repo / "metrics.py").write_text("# helpers of the training loop\n\n" + moved)
    assert gate(capsys, "--diff", "HEAD") == (0, [])


def test_a_changed_file_that_cannot_be_analysed_is_reported_even_when_the_base_could_not_either(repo, capsys):
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(repo, "commit", "-qam", "call it every step")
    limit = ["--max-file-size", "100"]  # both files are larger: neither can be analysed, then or now
    assert gate(capsys, "--diff", "HEAD", *limit) == (0, [])
    (repo / "metrics.py").write_text(METRICS + "\n# edited\n")
    code, lines = gate(capsys, "--diff", "HEAD", *limit)
    assert (code, [line.split(" [")[0] for line in lines]) == (1, ["metrics.py:1:1: VP900"])


def test_the_base_is_analysed_once_per_commit_and_a_tampered_entry_is_not_trusted(repo, capsys, monkeypatch):
    (repo / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(repo, "commit", "-qam", "commit 2: call it every step")
    analysed = diffbase._analysed
    calls = []
    monkeypatch.setattr(diffbase, "_analysed", lambda *a, **k: calls.append(1) or analysed(*a, **k))
    assert gate(capsys, "--diff", "HEAD~1") == (1, [HOT_HELPER])
    assert gate(capsys, "--diff", "HEAD~1") == (1, [HOT_HELPER])
    assert len(calls) == 1
    (entry,) = [
        os.path.join(folder, name) for folder, _, names in os.walk(repo / ".verify_perf_cache")
        for name in names if name.startswith("base-")
    ]
    with open(entry, "rb") as handle:
        data = handle.read()
    # The stored finding of the base forged away: unsigned now, so it is a miss, analysed again.
    with open(entry, "wb") as handle:
        handle.write(data.replace(b"VP306", b"VP307"))
    assert gate(capsys, "--diff", "HEAD~1") == (1, [HOT_HELPER])
    assert len(calls) == 2


def test_before_the_first_commit_everything_staged_is_new(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "metrics.py").write_text(METRICS)
    (tmp_path / "train.py").write_text(TRAIN.format(**CALLS_IT))
    git(tmp_path, "add", ".")
    code, lines = gate(capsys, "--diff", "HEAD", "--select", "VP203")
    assert (code, lines) == (1, [HOT_HELPER])
    assert main([".", "--no-report", "--diff", "main"]) == 2
    assert "--diff main: not a commit" in capsys.readouterr().err
