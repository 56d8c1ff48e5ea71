"""The key that signs cache entries lives in the user's cache directory, private to the user,
created once (by whichever run comes first) and never trusted when someone else could know it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.config import Settings
from verifier.static.cache_key import KEY_SIZE, KeyUnavailable, key_path, signing_key
from verifier.static.runner import analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
posix_only = pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG layout is Linux's")


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("VERIFY_PERF_CACHE_KEY_FILE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


@posix_only
def test_the_key_is_created_private_in_the_user_cache_directory(cache_home):
    previous = os.umask(0)
    try:
        key = signing_key()
    finally:
        os.umask(previous)
    path = cache_home / "verify-perf" / "key"
    assert key_path() == str(path)
    assert len(key) == KEY_SIZE and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert signing_key() == key
    assert sorted(p.name for p in path.parent.iterdir()) == ["key"]  # no temporary file left


@posix_only
def test_a_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch):
    monkeypatch.delenv("VERIFY_PERF_CACHE_KEY_FILE")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert key_path() == str(tmp_path / ".cache" / "verify-perf" / "key")


def test_runs_starting_together_agree_on_one_key(cache_home):
    script = "import sys\nfrom verifier.static.cache_key import signing_key\nsys.stdout.buffer.write(signing_key())"
    runs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) for _ in range(6)]
    keys = {run.communicate(timeout=60)[0] for run in runs}
    assert keys == {(cache_home / "verify-perf" / "key").read_bytes()}
    assert sorted(p.name for p in (cache_home / "verify-perf").iterdir()) == ["key"]


def make_key(cache_home: Path, *, mode: int = 0o600, data: bytes = b"k" * KEY_SIZE) -> Path:
    path = cache_home / "verify-perf" / "key"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
@pytest.mark.parametrize("problem", ["readable-by-others", "wrong-size", "a-link", "a-folder"])
def test_a_key_someone_else_could_know_is_never_used(cache_home, tmp_path, capsys, problem):
    if problem == "readable-by-others":
        path = make_key(cache_home, mode=0o644)
        reason = "is not private to this user (it must be yours, mode 600; remove it to make a new one)"
    elif problem == "wrong-size":
        path = make_key(cache_home, data=b"short")
        reason = f"is not a {KEY_SIZE}-byte file (remove it to make a new one)"
    elif problem == "a-link":
        elsewhere = make_key(tmp_path / "elsewhere")
        path = cache_home / "verify-perf" / "key"
        path.parent.mkdir(parents=True)
        path.symlink_to(elsewhere)
        reason = "(Too many levels of symbolic links)"
    else:
        path = cache_home / "verify-perf" / "key"
        path.mkdir(parents=True)
        reason = "is not a 32-byte file (remove it to make a new one)"
    with pytest.raises(KeyUnavailable):
        signing_key()
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "bad_train.py")
    cache = tmp_path / "cache"
    result = analyze_paths([str(tmp_path / "bad_train.py")], Settings(cache_dir=str(cache)))
    assert result.findings == analyze_paths([str(tmp_path / "bad_train.py")], Settings()).findings
    err = capsys.readouterr().err
    assert err.startswith(f"verify-perf: warning: not using the cache {cache}: ")
    assert str(path) in err and reason in err
    assert not cache.exists()
