"""Ignore files: git's own view inside a work tree, gitignore's rules matched here outside one
(checked against `git check-ignore` itself), `.ignore` files on top, nested repositories."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from verifier.static.discovery import discover
from verifier.static.ignore_files import PatternFiles, parse_ignore_file

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# (pattern lines, path, is_dir): each case is judged by git and by the matcher.
PATTERNS = [
    "*.log", "build/", "/top_only.py", "docs/*.py", "**/generated", "deep/**", "a/**/z.py", "!keep.log",
    "data[0-9].py", "tmp?.py", "\\#hash.py", "spaced\\ ", "notes/", "!notes/keep.py", "sub/*/x.py",
    "[!a-m]*.cfg", "weird[.py", "lib/*", "x**y.py", "*.py[co]", "**/cache/data/", "doc/frotz/", "only_dir/",
    "[]]bracket.py", "r[a-c-]n.py",
]
PATHS = [
    ("run.log", False), ("keep.log", False), ("logs/run.log", False), ("build", True), ("src/build", True),
    ("build.py", False), ("top_only.py", False), ("src/top_only.py", False), ("docs/a.py", False),
    ("docs/sub/a.py", False), ("generated", True), ("x/y/generated", True), ("deep/a.py", False),
    ("deep/b/c.py", False), ("a/z.py", False), ("a/b/c/z.py", False), ("a/b/y.py", False), ("data1.py", False),
    ("data10.py", False), ("tmp1.py", False), ("tmp12.py", False), ("#hash.py", False), ("spaced ", False),
    ("notes", True), ("sub/one/x.py", False), ("sub/one/two/x.py", False), ("n.cfg", False), ("b.cfg", False),
    ("weird[.py", False), ("lib/a.py", False), ("lib/sub/a.py", False), ("xzzy.py", False), ("xa/by.py", False),
    ("m.pyc", False), ("m.py", False), ("p/cache/data", True), ("cache/data", True),
    ("doc/frotz", True), ("a/doc/frotz", True), ("only_dir", False), ("only_dir", True), ("]bracket.py", False),
    ("rbn.py", False), ("r-n.py", False), ("rdn.py", False),
]


def git_ignores(folder, paths) -> set[str]:
    """The paths git's own matcher ignores, by `.gitignore` alone (no index, no global excludes)."""
    given = "\0".join(path + ("/" if is_dir else "") for path, is_dir in paths) + "\0"
    completed = subprocess.run(
        ["git", "-c", "core.excludesFile=/dev/null", "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=folder, input=given.encode(), capture_output=True, check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return {name.rstrip("/") for name in completed.stdout.decode().split("\0") if name}


@needs_git
def test_the_matcher_agrees_with_git_check_ignore(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("\n".join(PATTERNS) + "\n")
    expected = git_ignores(tmp_path, PATHS)
    assert "run.log" in expected and "keep.log" not in expected  # the case list means something
    matcher = PatternFiles(str(tmp_path), (".gitignore",))  # as outside a work tree

    def walked_past(path: str, is_dir: bool) -> bool:
        # A walk never enters an ignored folder, so what is below one is left out with it.
        parts = path.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        return any(matcher.verdict(str(tmp_path / f), True) for f in folders) or bool(
            matcher.verdict(str(tmp_path / path), is_dir)
        )

    found = {path for path, is_dir in PATHS if walked_past(path, is_dir)}
    assert found == expected


def test_comments_blank_lines_and_negation_parse_as_gitignore_says():
    patterns = parse_ignore_file("# a comment\n\n   \n!important.py\nbuild/  \n")
    assert [(p.negated, p.directory_only) for p in patterns] == [(True, False), (False, True)]


def make_tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


TREE = {
    "train.py": "x = 1\n",
    "gen/made.py": "x = 1\n",
    "src/model.py": "x = 1\n",
    "src/scratch_1.py": "x = 1\n",
    "vendor/lib.py": "x = 1\n",
    ".gitignore": "gen/\nscratch_*.py\n",
    ".ignore": "vendor/\n",
}


def listed(root, **options) -> list[str]:
    return sorted(os.path.relpath(path, root) for path in discover([str(root)], **options))


def test_outside_git_gitignore_and_ignore_files_are_matched_here(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    make_tree(tmp_path, TREE)
    assert listed(tmp_path) == ["src/model.py", "train.py"]
    assert listed(tmp_path, respect_ignore_files=False) == [
        "gen/made.py", "src/model.py", "src/scratch_1.py", "train.py", "vendor/lib.py",
    ]


@needs_git
def test_inside_git_git_decides_and_a_tracked_file_is_never_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    make_tree(tmp_path, TREE)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("train.py\n")
    # Tracked despite the pattern: git lists it, so it is analysed (git's own rule).
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "src/scratch_1.py"], check=True)
    assert listed(tmp_path) == ["src/model.py", "src/scratch_1.py"]


@needs_git
def test_a_nested_repository_answers_for_its_own_files(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    make_tree(tmp_path, {"train.py": "x = 1\n", "third_party/lib/core.py": "x = 1\n",
                         "third_party/lib/out/built.py": "x = 1\n", "third_party/lib/.gitignore": "out/\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "init", "-q", str(tmp_path / "third_party" / "lib")], check=True)
    assert listed(tmp_path) == ["third_party/lib/core.py", "train.py"]


def test_the_library_entry_point_honours_the_setting(tmp_path, monkeypatch):
    # `analyze_paths` (what the benchmarks and other tools call) reads ignore files as the CLI does,
    # and `respect_gitignore=False` turns that off there too.
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / ".gitignore").write_text("gen/\n")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "made.py").write_text("x = 1\n")
    (tmp_path / "train.py").write_text("y = 2\n")
    monkeypatch.chdir(tmp_path)
    kept = analyze_paths(["."], Settings(jobs=1, cache_dir=str(tmp_path / "c")))
    everything = analyze_paths(["."], Settings(jobs=1, cache_dir=str(tmp_path / "c"), respect_gitignore=False))
    assert sorted(f.path for f in kept.files) == ["train.py"]
    assert sorted(f.path for f in everything.files) == ["gen/made.py", "train.py"]
