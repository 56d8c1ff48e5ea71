"""The scorer exports the Python sources of a pinned commit: regular files, never links."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _scorer():
    spec = importlib.util.spec_from_file_location("score_realcode", HERE / "score_realcode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def test_a_symbolic_link_named_like_a_source_is_not_exported(tmp_path):
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "model.py").write_text("import torch\n")
    (repo / "pkg" / "tool.py").write_text("print(1)\n")
    os.symlink("model.py", repo / "pkg" / "alias.py")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    commit = _git(repo, "rev-parse", "HEAD").strip()

    dest = tmp_path / "out"
    count = _scorer().export_py(str(repo / ".git"), commit, ["."], str(dest))

    assert count == 2
    assert sorted(p.name for p in (dest / "pkg").iterdir()) == ["model.py", "tool.py"]
