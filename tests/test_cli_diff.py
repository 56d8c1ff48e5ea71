"""`--diff BASE`: the change is judged by its effect. A finding is reported when the merge base did
not have it, or had it colder or less severe, wherever it is; heat comes from the whole project, so
a helper made hot by an unchanged caller is reported, and so is an unchanged helper that a changed
loop starts calling."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from tests.git_repo import git
from verifier.cli import main
from verifier.gitdiff import hunk_lines

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
OTHER = (
    "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"
    "    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n"
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


def test_only_what_the_change_made_new_is_reported(repo, capsys):
    (repo / "src" / "train.py").write_text(CHANGED)
    git(repo, "commit", "-qam", "log the loss")
    code, report = findings(capsys, "src", "--diff", "main")
    assert report["files"] == ["src/other.py", "src/train.py"]
    assert [(f["code"], f["line"], f["heat"]) for f in report["findings"]] == [("VP201", 10, "step")]
    assert report["diff_base"] == "main"
    assert code == 0  # the HIGH synchronize on line 9 was there at the merge base

    _, full = findings(capsys, "src")
    assert {(f["code"], f["line"]) for f in full["findings"]} >= {("VP203", 9), ("VP201", 10), ("VP203", 4)}


def test_uncommitted_and_untracked_changes_count(repo, capsys):
    (repo / "src" / "train.py").write_text(CHANGED)
    (repo / "src" / "new.py").write_text(OTHER)
    _, report = findings(capsys, "src", "--diff", "main")
    assert report["files"] == ["src/new.py", "src/other.py", "src/train.py"]
    # new.py holds other.py's code: other.py keeps its own finding, new.py's copy is new.
    assert [(f["path"], f["line"]) for f in report["findings"]] == [("src/new.py", 4), ("src/train.py", 10)]


def test_nothing_changed_passes_with_nothing_new(repo, capsys):
    code, report = findings(capsys, "src", "--diff", "main")
    assert (code, report["files"], report["findings"]) == (0, ["src/other.py", "src/train.py"], [])


def test_the_markdown_report_says_it_is_a_pre_merge_run(repo):
    (repo / "src" / "train.py").write_text(CHANGED)
    main(["src", "--diff", "main", "--date", "2026-01-01"])
    text = (repo / "reports" / "src.md").read_text()
    assert (
        "Pre-merge mode: the change since the merge base of `main` is judged by its effect on 2 Python files in "
        "`src`; only findings the merge base did not have, or had colder or less severe, are reported, wherever they are."
    ) in text
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


def test_hunk_lines_reads_new_side_lines_and_skips_deletions():
    patch = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        b"@@ -3,0 +4,2 @@ def f():\n+x\n+y\n"
        b"@@ -10,2 +12,0 @@\n-gone\n-gone\n"
        b"@@ -20 +20 @@\n-old\n+new\n"
    )
    assert hunk_lines(patch) == frozenset({4, 5, 20})


CALLER = """\
import torch
from helper import log_step


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        log_step(loss)
"""
HELPER_BEFORE = "def log_step(loss):\n    return loss\n"
HELPER_AFTER = "import torch\n\n\ndef log_step(loss):\n    torch.cuda.synchronize()\n    return loss\n"


def hook_definition() -> dict:
    hooks = yaml.safe_load((Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "verify-perf"]
    return hook


def hook_entry() -> list[str]:
    hook = hook_definition()
    return shlex.split(hook["entry"]) + list(hook.get("args", []))


@pytest.fixture
def two_files(tmp_path, monkeypatch):
    """A caller whose step loop calls a helper; only the helper changes."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "train.py").write_text(CALLER)
    (tmp_path / "helper.py").write_text(HELPER_BEFORE)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "helper.py").write_text(HELPER_AFTER)
    git(tmp_path, "commit", "-qam", "sync in the helper")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_changed_helper_gets_the_heat_of_its_unchanged_caller(two_files, capsys):
    code, report = findings(capsys, ".", "--diff", "HEAD~1")
    assert report["files"] == ["helper.py", "train.py"]
    assert report["heat_files"] == 2
    assert [(f["path"], f["code"], f["line"], f["severity"], f["heat"]) for f in report["findings"]] == [
        ("helper.py", "VP203", 5, "HIGH", "step")
    ]
    assert code == 1


def test_the_pre_commit_hook_command_line_reports_the_helper(tmp_path, monkeypatch, capsys):
    """pre-commit runs the hook's `entry` as it is (no file names) with the change staged."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "train.py").write_text(CALLER)
    (tmp_path / "helper.py").write_text(HELPER_BEFORE)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "helper.py").write_text(HELPER_AFTER)
    git(tmp_path, "add", "helper.py")
    monkeypatch.chdir(tmp_path)
    entry, hook = hook_entry(), hook_definition()
    assert entry == ["verify-perf", "--no-report", "--diff", "HEAD", "."] and hook["pass_filenames"] is False
    code = main([*entry[1:], "--select", "VP2", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["code"], f["line"], f["severity"]) for f in report["findings"]] == [
        ("helper.py", "VP203", 5, "HIGH")
    ]
    assert code == 1
    assert not (tmp_path / "reports").exists()


def test_the_hook_is_verbose_so_a_passing_commit_shows_its_findings():
    """pre-commit prints a passing hook's output only for a verbose hook; MEDIUM and LOW findings
    never block, so without it they would never be seen (the slow packaging test runs it)."""
    assert hook_definition()["verbose"] is True
    documented = (Path(__file__).resolve().parent.parent / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    assert "verbose: false" in documented


def test_with_heat_scope_paths_the_helper_alone_is_cold(two_files, capsys):
    code, report = findings(capsys, "helper.py", "--heat-scope", "paths")
    assert (code, report["findings"], report["heat_files"]) == (0, [], 1)


@pytest.mark.parametrize(
    "name",
    ["my train.py", 'say "hi".py', "tab\there.py", "caf\u00e9.py", b"latin\xe9.py"],
    ids=["space", "quotes", "tab", "utf-8", "non-utf-8"],
)
def test_changed_files_with_awkward_names_are_analysed(repo, capsys, name):
    filename = os.fsdecode(name) if isinstance(name, bytes) else name
    (repo / "src" / filename).write_text(TRAIN)
    git(repo, "add", "--", os.path.join("src", filename))
    git(repo, "commit", "-qm", "add a file with an awkward name")
    code, report = findings(capsys, "src", "--diff", "main")
    assert report["files"] == sorted([os.path.join("src", filename), "src/other.py", "src/train.py"])
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [(os.path.join("src", filename), "VP203", 9)]
    assert code == 1


def test_a_modified_file_with_a_space_reports_only_its_changed_line(repo, capsys):
    (repo / "src" / "my train.py").write_text(TRAIN)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base for the spaced name")
    (repo / "src" / "my train.py").write_text(CHANGED)
    code, report = findings(capsys, "src", "--diff", "HEAD")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [("src/my train.py", "VP201", 10)]
    assert code == 0


def test_a_renamed_file_keeps_its_findings_and_reports_what_the_change_added(repo, capsys):
    # Findings are matched by what they are, not by git's guess at renames (a similarity score).
    git(repo, "mv", "src/train.py", "src/renamed train.py")
    (repo / "src" / "renamed train.py").write_text(CHANGED)
    git(repo, "commit", "-qam", "rename and log")
    _, report = findings(capsys, "src", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [("src/renamed train.py", "VP201", 10)]


# ----- git's facts, not git's presentation -----


@pytest.mark.parametrize("attributes", ["*.py -diff\n", "*.py binary\n", "*.py diff=hide\n"],
                         ids=["minus-diff", "binary", "textconv-driver"])
def test_attributes_added_by_the_change_hide_no_line(repo, capsys, attributes):
    # A driver the machine configured (here in the repository's config) would show other text.
    git(repo, "config", "diff.hide.textconv", "head -n 1")
    (repo / ".gitattributes").write_text(attributes)
    (repo / "src" / "train.py").write_text(CHANGED)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "log the loss, and hide it")
    code, report = findings(capsys, "src", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [("src/train.py", "VP201", 10)]
    assert code == 0


def test_diff_options_from_the_environment_do_not_widen_the_changed_lines(repo, capsys, monkeypatch):
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=5")  # git lets it win over --unified=0
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "true")
    (repo / "src" / "train.py").write_text(CHANGED)
    _, report = findings(capsys, "src", "--diff", "main")
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("VP201", 10)]


@pytest.mark.parametrize("variable", ["GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS"])
def test_pathspec_settings_from_the_environment_do_not_stop_the_diff(repo, capsys, monkeypatch, variable):
    # git refuses them beside --literal-pathspecs: --diff was exit 2 for a user who exports one.
    monkeypatch.setenv(variable, "1")
    (repo / "src" / "train.py").write_text(CHANGED)
    _, report = findings(capsys, "src", "--diff", "main")
    assert [(f["code"], f["line"]) for f in report["findings"]] == [("VP201", 10)]


def test_a_symlink_that_becomes_a_file_full_of_bad_code_is_reported(repo, capsys):
    os.symlink("other.py", repo / "src" / "model.py")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "model is an alias")
    git(repo, "branch", "-f", "main")
    (repo / "src" / "model.py").unlink()
    (repo / "src" / "model.py").write_text(TRAIN)  # git status: T (type change)
    git(repo, "commit", "-qam", "model is its own code now")
    code, report = findings(capsys, "src", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [("src/model.py", "VP203", 9)]
    assert code == 1


def test_a_link_to_a_changed_file_keeps_the_files_own_changed_lines(repo, capsys):
    (repo / "src" / "train.py").write_text(CHANGED)
    os.symlink("train.py", repo / "src" / "zz_alias.py")  # listed after train.py: it used to win
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "log the loss, add an alias")
    code, report = findings(capsys, "src", "--diff", "main")
    # The link is a new name for the code: all of it is new there; the file keeps its own lines.
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [
        ("src/train.py", "VP201", 10), ("src/zz_alias.py", "VP203", 9), ("src/zz_alias.py", "VP201", 10),
    ]
    # Nothing blocks: the read right after the sync makes the sync LOW, and the read is MEDIUM.
    assert code == 0


def test_an_unchanged_link_shows_the_changes_of_the_file_it_names(repo, capsys):
    os.symlink("train.py", repo / "src" / "alias.py")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "an alias")
    git(repo, "branch", "-f", "main")
    (repo / "src" / "train.py").write_text(CHANGED)
    _, report = findings(capsys, "src", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [
        ("src/alias.py", "VP201", 10), ("src/train.py", "VP201", 10),
    ]


def test_every_named_repository_counts(tmp_path, monkeypatch, capsys):
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        git(folder, "init", "-q", "-b", "main")
        (folder / "train.py").write_text(TRAIN)
        git(folder, "add", ".")
        git(folder, "commit", "-q", "-m", "base")
        git(folder, "checkout", "-q", "-b", "feature")
        (folder / "train.py").write_text(CHANGED)
        git(folder, "commit", "-qam", "log the loss")
    monkeypatch.chdir(tmp_path)
    _, report = findings(capsys, "first", "second", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [
        ("first/train.py", "VP201", 10), ("second/train.py", "VP201", 10),
    ]


def test_a_new_repository_inside_the_work_tree_is_wholly_changed(repo, capsys):
    nested = repo / "src" / "vendored"
    nested.mkdir()
    git(nested, "init", "-q", "-b", "main")
    (nested / "step.py").write_text(TRAIN)
    git(nested, "add", ".")
    git(nested, "commit", "-q", "-m", "its own history")
    _, report = findings(capsys, "src", "--diff", "main")
    assert [(f["path"], f["code"], f["line"]) for f in report["findings"]] == [("src/vendored/step.py", "VP203", 9)]


def test_a_ref_that_looks_like_an_option_is_refused(repo, capsys):
    assert main(["src", "--diff=--output=stolen.txt", "--no-report"]) == 2
    assert capsys.readouterr().err == "verify-perf: error: --diff '--output=stolen.txt': a git ref cannot start with '-'\n"
    assert not (repo / "stolen.txt").exists()
