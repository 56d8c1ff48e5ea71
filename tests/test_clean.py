"""`verify-perf clean` removes what verify-perf put in a cache folder and nothing else: a folder of
the user's is never claimed as a cache (so never cleaned), a folder an earlier version claimed
keeps the user's files, and no symbolic link is followed out of the cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from verifier.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
THESIS = "Chapter 1. Five years of work.\n"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and link under `folder` with its content (a link: where it points)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = path.read_text(errors="replace")
    return found


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A training script, a fake home with a user's thesis in it, and a fake project."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERIFY_PERF_CACHE_DIR", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "x.py")
    (tmp_path / "home" / "Documents").mkdir(parents=True)
    (tmp_path / "home" / "Documents" / "thesis.txt").write_text(THESIS)
    (tmp_path / "project" / "src").mkdir(parents=True)
    (tmp_path / "project" / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    shutil.copy(EXAMPLES / "good_train.py", tmp_path / "project" / "src" / "train.py")
    return tmp_path


def refused_as_cache(folder: str) -> str:
    return (
        f"verify-perf: error: refusing to use {folder} as the results cache: it holds files that verify-perf "
        "did not put there (name a new or empty folder with --cache-dir or $VERIFY_PERF_CACHE_DIR, or pass --no-cache)"
    )


def not_a_cache(folder: str) -> str:
    return f"verify-perf: error: not removing {folder}: it is not a verify-perf cache (no CACHEDIR.TAG of ours)"


def test_a_home_folder_named_as_the_cache_is_refused_and_survives_clean(workspace, capsys):
    home = workspace / "home"
    before = snapshot(home)
    assert main(["x.py", "--no-report", "-q", "--cache-dir", "home"]) == 2
    assert capsys.readouterr().err.splitlines() == [refused_as_cache("home")]
    assert snapshot(home) == before  # no CACHEDIR.TAG written into it
    assert main(["clean", "--cache-dir", "home"]) == 2
    assert capsys.readouterr().err.splitlines() == [not_a_cache("home")]
    assert snapshot(home) == before == {"Documents/thesis.txt": THESIS}


def test_a_project_named_by_the_environment_is_refused_and_survives_clean(workspace, capsys, monkeypatch):
    project = workspace / "project"
    before = snapshot(project)
    monkeypatch.setenv("VERIFY_PERF_CACHE_DIR", "project")
    assert main(["project/src/train.py", "--no-report", "-q"]) == 2
    assert capsys.readouterr().err.splitlines() == [refused_as_cache("project")]
    assert main(["clean"]) == 2
    assert capsys.readouterr().err.splitlines() == [not_a_cache("project")]
    assert snapshot(project) == before


def test_a_new_or_empty_folder_becomes_the_cache_and_clean_removes_it_whole(workspace, capsys):
    (workspace / "empty").mkdir()
    for folder in ("new/cache", "empty"):
        assert main(["x.py", "--no-report", "-q", "--cache-dir", folder]) == 1
        assert (workspace / folder / "CACHEDIR.TAG").is_file()
        assert main(["clean", "--cache-dir", folder]) == 0
        assert not (workspace / folder).exists()
    assert (workspace / "new").is_dir()  # a parent verify-perf created is not the cache
    assert capsys.readouterr().err.splitlines() == ["Removing cache at: new/cache", "Removing cache at: empty"]


def test_a_folder_an_earlier_version_claimed_keeps_the_users_files(workspace, capsys):
    """Before this check, a run wrote its CACHEDIR.TAG into any folder: clean then removes the
    cache's own files one by one, by the cache's layout, and leaves the user's where they are."""
    assert main(["x.py", "--no-report", "-q", "--cache-dir", "made"]) == 1
    home = workspace / "home"
    shutil.copytree(workspace / "made", home, dirs_exist_ok=True)
    assert {"CACHEDIR.TAG", ".gitignore"} < set(snapshot(home)) and len(snapshot(home)) >= 5
    capsys.readouterr()
    assert main(["clean", "--cache-dir", "home"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "Removing cache at: home",
        "verify-perf: warning: left home in place: it holds files verify-perf did not put there (Documents)",
    ]
    assert snapshot(home) == {"Documents/thesis.txt": THESIS}
    assert main(["x.py", "--no-report", "-q", "--cache-dir", "home"]) == 2  # no longer claimed


def test_links_inside_a_cache_are_left_and_never_followed(workspace, capsys):
    outside = workspace / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "victim.json").write_text("{}\n")
    (outside / "deep" / "file.txt").write_text("keep\n")
    assert main(["x.py", "--no-report", "-q", "--cache-dir", "cache"]) == 1
    cache = workspace / "cache"
    shard = next(cache.rglob("run-*.json")).parent
    (shard / "ab").symlink_to(outside)  # named like a shard
    (shard / f"{'a' * 64}.json").symlink_to(outside / "victim.json")  # named like an entry
    (cache / ("b" * 24)).symlink_to(outside)  # named like a fingerprint folder
    before = snapshot(outside)
    capsys.readouterr()
    assert main(["clean", "--cache-dir", "cache"]) == 0
    assert snapshot(outside) == before
    links = ["b" * 24, *(shard.relative_to(cache).joinpath(name).as_posix() for name in ("ab", f"{'a' * 64}.json"))]
    assert sorted(snapshot(cache)) == sorted(links)
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "verify-perf: warning: left cache in place: it holds files verify-perf did not put there ("
    )


def test_a_cache_named_through_a_link_with_a_trailing_slash_is_not_followed(workspace, capsys):
    """`link/` makes the system resolve the link: it is still the link the user named."""
    assert main(["x.py", "--no-report", "-q", "--cache-dir", "real"]) == 1
    (workspace / "real" / "notes.txt").write_text(THESIS)
    (workspace / "link").symlink_to(workspace / "real")
    before = snapshot(workspace / "real")
    capsys.readouterr()
    assert main(["clean", "--cache-dir", "link/"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "verify-perf: error: not removing link: it is not a verify-perf cache (a symbolic link or not a folder)"
    ]
    assert snapshot(workspace / "real") == before


def test_every_kind_of_entry_is_removed_with_the_cache(workspace, capsys):
    # A script with command-line defaults stores its configuration defaults too, and every run
    # keeps a record of itself for the next one: clean removes those with the rest.
    (workspace / "y.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--every', type=int, default=1)\n"
        + (workspace / "x.py").read_text()
    )
    assert main(["y.py", "--no-report", "-q", "--cache-dir", "made"]) == 1
    names = {path.name.split("-")[0] for path in (workspace / "made").rglob("*.json")}
    assert {"defaults", "last", "run"} <= names
    assert main(["clean", "--cache-dir", "made"]) == 0
    assert not (workspace / "made").exists()
    assert capsys.readouterr().err.splitlines() == ["Removing cache at: made"]
