"""Which files get analysed, and clear errors for paths that cannot be."""

from __future__ import annotations

import os

import pytest

from verifier.static.discovery import UsageError, discover
from verifier.static.patterns import PathPattern


def touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n")


def test_default_excludes_and_stable_order(tmp_path):
    for rel in ["b.py", "a.py", "pkg/c.py", ".venv/lib/d.py", "build/e.py", "pkg/__pycache__/f.py",
                "node_modules/g.py", "x.egg-info/h.py", "notes.txt"]:
        touch(tmp_path / rel)
    found = [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)])]
    assert found == ["a.py", "b.py", os.path.join("pkg", "c.py")]


def test_exclude_option_takes_globs(tmp_path):
    for rel in ["train.py", "tests/test_train.py", "legacy/old.py"]:
        touch(tmp_path / rel)
    patterns = [PathPattern.at("tests", str(tmp_path)), PathPattern.at("legacy/*.py", str(tmp_path))]
    found = [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path)], exclude=patterns)]
    assert found == ["train.py"]


def test_a_pattern_with_a_slash_is_relative_to_its_anchor_not_to_the_walked_folder(tmp_path):
    for rel in ["src/legacy/old.py", "src/legacy/keep/new.py", "src/train.py", "other/legacy/old.py"]:
        touch(tmp_path / rel)
    patterns = [PathPattern.at("src/legacy/*.py", str(tmp_path))]
    found = [os.path.relpath(p, tmp_path) for p in discover([str(tmp_path / "src"), str(tmp_path / "other")], patterns)]
    # `*` crosses `/` as in ruff's globs, so src/legacy/keep/new.py is excluded too.
    assert found == [os.path.join("src", "train.py"), os.path.join("other", "legacy", "old.py")]


def test_force_exclude_tests_the_named_file_and_its_folders_below_the_boundary(tmp_path):
    touch(tmp_path / "env" / "project" / "generated" / "model_pb2.py")
    touch(tmp_path / "env" / "project" / "train.py")
    named = [str(tmp_path / "env" / "project" / "generated" / "model_pb2.py"), str(tmp_path / "env" / "project" / "train.py")]
    patterns = [PathPattern.at("generated", str(tmp_path / "env" / "project"))]
    boundary = str(tmp_path / "env" / "project")
    assert len(list(discover(named, patterns, boundary=boundary))) == 2
    kept = list(discover(named, patterns, force_exclude=True, boundary=boundary))
    # `env` (a default exclude) is above the project: it does not hide the project's files.
    assert [os.path.basename(p) for p in kept] == ["train.py"]


def test_root_inside_an_excluded_name_still_works(tmp_path):
    touch(tmp_path / "env" / "project" / "train.py")
    assert [os.path.basename(p) for p in discover([str(tmp_path / "env" / "project")])] == ["train.py"]


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file or directory"):
        list(discover([str(tmp_path / "missing")]))


def test_non_python_file_named_directly_is_a_usage_error(tmp_path):
    (tmp_path / "README.md").write_text("# hi\n")
    with pytest.raises(UsageError, match="not a Python file"):
        list(discover([str(tmp_path / "README.md")]))


def test_symlink_loops_are_not_followed(tmp_path):
    touch(tmp_path / "pkg" / "a.py")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    assert [os.path.basename(p) for p in discover([str(tmp_path)])] == ["a.py"]
