"""`--diff BASE`: only files and lines changed since the merge base; heat still from whole files."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from verifier.cli import main
from verifier.gitdiff import parse_diff

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

TRAIN = """\
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
"""
# One hunk: a per-step sync added at the end of the loop body (line 10).
CHANGED = TRAIN + "        print(loss.item())\n"
OTHER = "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"


def git(repo, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True,
    )


@pytest.fixture
def repo(tmp_path, monkeypatch):
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    (tmp_path / "src" / "other.py").write_text(OTHER)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def findings(capsys, *args) -> tuple[int, dict]:
    code = main([*args, "--select", "VP2", "--format", "json", "--no-report"])
    return code, json.loads(capsys.readouterr().out)


def test_only_changed_lines_of_changed_files_are_reported(repo, capsys):
    (repo / "src" / "train.py").write_text(CHANGED)
    git(repo, "commit", "-qam", "log the loss")
    code, report = findings(capsys, "src", "--diff", "main")
    assert report["files"] == ["src/train.py"]
    assert [(f["code"], f["line"], f["heat"]) for f in report["findings"]] == [("VP201", 10, "step")]
    assert report["diff_base"] == "main"
    assert code == 0  # the pre-existing HIGH synchronize on line 9 is not on a changed line

    _, full = findings(capsys, "src")
    assert {(f["code"], f["line"]) for f in full["findings"]} >= {("VP203", 9), ("VP201", 10), ("VP203", 4)}


def test_uncommitted_and_untracked_changes_count(repo, capsys):
    (repo / "src" / "train.py").write_text(CHANGED)
    (repo / "src" / "new.py").write_text(OTHER)
    _, report = findings(capsys, "src", "--diff", "main")
    assert report["files"] == ["src/new.py", "src/train.py"]
    assert [(f["path"], f["line"]) for f in report["findings"]] == [("src/new.py", 4), ("src/train.py", 10)]


def test_nothing_changed_passes_with_no_files(repo, capsys):
    code, report = findings(capsys, "src", "--diff", "main")
    assert (code, report["files"], report["findings"]) == (0, [], [])


def test_the_markdown_report_says_it_is_a_pre_merge_run(repo):
    (repo / "src" / "train.py").write_text(CHANGED)
    main(["src", "--diff", "main", "--date", "2026-01-01"])
    text = (repo / "reports" / "src.md").read_text()
    assert "Pre-merge mode: 1 Python file changed since `main`" in text
    assert "--diff main" in text.split("Reproduce this report:")[1]


def test_an_unknown_base_is_a_usage_error(repo, capsys):
    assert main(["src", "--diff", "no-such-branch", "--no-report"]) == 2
    assert "--diff no-such-branch: not a commit" in capsys.readouterr().err


def test_outside_a_repository_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.py").write_text(TRAIN)
    assert main(["train.py", "--diff", "main", "--no-report"]) == 2
    assert "--diff" in capsys.readouterr().err


def test_parse_diff_reads_new_side_lines_and_skips_deletions():
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -3,0 +4,2 @@ def f():\n+x\n+y\n"
        "@@ -10,2 +12,0 @@\n-gone\n-gone\n"
        "@@ -20 +20 @@\n-old\n+new\n"
        "diff --git a/b.py b/b.py\ndeleted file mode 100644\n--- a/b.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    assert parse_diff(diff) == {"a.py": frozenset({4, 5, 20})}
