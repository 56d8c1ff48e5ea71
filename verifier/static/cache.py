"""A results cache keyed by everything a result depends on (like ruff's), safe to find anywhere.

Layout: `<root>/<tool fingerprint>/<settings digest>/<key[:2]>/<key>.json`, written through a
temporary file and a rename. A file's key covers its path, its module name (which
`__init__.py` files surround it) and its content; the settings digest covers every setting
that changes a result, the per-file time limit included. Results of the project-wide heat pass
add a digest of the project facts they read. A whole-run entry keyed by every file's key lets
an unchanged tree skip even the per-file loads.

The folder may have been committed or restored by someone else: entries are signed with a key
kept outside the project (`cache_key`) and are data-only JSON checked on read (`cache_format`);
anything unsigned, oversized or unexpected is a miss that the run rewrites. A root that is a
symbolic link, not a directory or holds files tracked by git is not used; a folder that already
holds someone else's files is refused (exit 2) rather than claimed (`cache_layout`). Every
access goes through file descriptors opened without following links, so nothing is read or
written outside the root.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import subprocess
import sys
from dataclasses import asdict
from functools import cache
from pathlib import Path

import verifier
from verifier.config import Settings
from verifier.errors import UsageError
from verifier.git import git_environment
from verifier.static import cache_format, cache_layout
from verifier.static.cache_key import KeyUnavailable, signing_key
from verifier.static.discovery import display_path, module_name_for
from verifier.static.source import UnreadableSource, read_bytes

DEFAULT_CACHE_DIR = ".verify_perf_cache"
# Settings that change how a run is carried out, never what it finds.
_NOT_IN_KEY = ("jobs", "cache_dir")
# Larger than any entry a real project needs (measured in docs/speed.md); a larger one is neither
# stored nor read, so a planted giant file is a miss, never a MemoryError.
_MAX_ENTRY_SIZE = 64 * 1024 * 1024
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0) | _NO_FOLLOW | getattr(os, "O_CLOEXEC", 0)


@cache
def tool_fingerprint() -> str:
    """The version plus a digest of the installed package's files, so edited rules never hit stale entries."""
    roots = [Path(verifier.__file__).parent]
    try:
        from verifier import rules

        roots.append(Path(rules.__file__).parent)
    except ImportError:
        pass
    digest = hashlib.sha256(verifier.__version__.encode())
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            status = path.stat()
            digest.update(f"{path.relative_to(root)}:{status.st_size}:{status.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def settings_digest(settings: Settings, rule_codes: list[str]) -> str:
    data = {k: v for k, v in asdict(settings).items() if k not in _NOT_IN_KEY}
    return hashlib.sha256(repr((sorted(data.items(), key=str), rule_codes)).encode()).hexdigest()[:24]


def file_key(path: str, module: str, data: bytes) -> str:
    """What a file's own analysis depends on besides the settings: where it is, which module
    that makes it (adding an `__init__.py` changes it), and its bytes."""
    identity = os.fsencode(path) + b"\0" + module.encode("utf-8", "surrogateescape") + b"\0"
    return hashlib.sha256(identity + data).hexdigest()


def run_key(file_keys: list[str | None]) -> str | None:
    """One key for a whole run: every file's key in order; None if any file was unreadable."""
    if any(key is None for key in file_keys):
        return None
    return "run-" + hashlib.sha256("\n".join(file_keys).encode()).hexdigest()


class UnsafeCacheRoot(Exception):
    """The cache folder cannot be used safely; the run goes on without a cache."""


class ForeignCacheRoot(UsageError):
    """The cache folder already holds someone else's files: claiming it could later cost them."""


class ResultCache:
    """Loads and stores values by key under one settings digest; every failure is a miss."""

    def __init__(self, root: str, settings: Settings, rule_codes: list[str]) -> None:
        if os.open not in os.supports_dir_fd or not _NO_FOLLOW:
            raise UnsafeCacheRoot("this platform cannot open files relative to a folder without following links")
        try:
            self._key = signing_key()
        except KeyUnavailable as problem:
            raise UnsafeCacheRoot(str(problem)) from None
        self.root = root
        self.max_file_size = settings.max_file_size
        self._parts = (tool_fingerprint(), settings_digest(settings, rule_codes))
        self._root_fd = _open_root(root)
        self._folder_fd: int | None = None

    def close(self) -> None:
        for descriptor in (self._folder_fd, self._root_fd):
            if descriptor is not None:
                os.close(descriptor)
        self._folder_fd = self._root_fd = None

    def __enter__(self) -> ResultCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def use_settings(self, settings: Settings, rule_codes: list[str]) -> None:
        """Load and store under other settings from now on (the project's configuration defaults
        are read, through this cache, before the settings of the run are complete)."""
        parts = (self._parts[0], settings_digest(settings, rule_codes))
        if parts != self._parts and self._folder_fd is not None:
            os.close(self._folder_fd)
            self._folder_fd = None
        self._parts = parts

    def key_for(self, path: str) -> str | None:
        try:
            return file_key(path, module_name_for(path), read_bytes(path, self.max_file_size))
        except UnreadableSource:
            return None

    def load(self, key: str, expected: type):
        """The stored value, or None when absent or not exactly what this build writes."""
        try:
            folder = self._folder(create=False)
            if folder is None:
                return None
            shard = os.open(key[:2], _DIRECTORY, dir_fd=folder)
            try:
                data = _read_entry(f"{key}.json", shard)
            finally:
                os.close(shard)
            return cache_format.loads(data, expected, self._key, self._entry_name(key))
        except (OSError, cache_format.Invalid):
            return None

    def store(self, key: str, value) -> None:
        """Best effort: a cache that cannot be written must never fail the run."""
        try:
            data = cache_format.dumps(value, self._key, self._entry_name(key))
        except cache_format.Unencodable:
            return
        if len(data) > _MAX_ENTRY_SIZE:
            return
        try:
            folder = self._folder(create=True)
            shard = _subfolder(folder, key[:2], create=True)
            try:
                _write_entry(shard, f"{key}.json", data)
            finally:
                os.close(shard)
        except OSError:
            pass

    def _entry_name(self, key: str) -> str:
        """What an entry's signature covers besides its body: where it is stored."""
        return "/".join((*self._parts, key))

    def _folder(self, *, create: bool) -> int | None:
        if self._folder_fd is None:
            fingerprint = _subfolder(self._root_fd, self._parts[0], create=create)
            if fingerprint is None:
                return None
            try:
                self._folder_fd = _subfolder(fingerprint, self._parts[1], create=create)
            finally:
                os.close(fingerprint)
        return self._folder_fd


def open_cache(root: str, settings: Settings, rule_codes: list[str]) -> ResultCache | None:
    """The cache at `root`, or None (after one line on stderr) when it cannot be used safely;
    ForeignCacheRoot (exit 2) when `root` is a folder of someone else's files."""
    try:
        return ResultCache(root, settings, rule_codes)
    except UnsafeCacheRoot as problem:
        print(f"verify-perf: warning: not using the cache {display_path(root)}: {problem}", file=sys.stderr)
        return None


def _open_root(root: str) -> int:
    """The root, claimed for the cache (marked) if it is new or empty; refused if it holds
    anything else and is not marked already."""
    root = cache_layout.as_named(root)
    try:
        status = os.lstat(root)
    except FileNotFoundError:
        try:
            os.makedirs(root, exist_ok=True)
        except OSError as error:
            raise UnsafeCacheRoot(f"cannot create it ({error.strerror or error})") from None
    else:
        if stat.S_ISLNK(status.st_mode):
            raise UnsafeCacheRoot("it is a symbolic link (remove it or pass --cache-dir)")
        if not stat.S_ISDIR(status.st_mode):
            raise UnsafeCacheRoot("it is not a directory")
    try:
        descriptor = os.open(root, _DIRECTORY)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeCacheRoot("it is a symbolic link or not a directory") from None
        raise UnsafeCacheRoot(f"cannot open it ({error.strerror or error})") from None
    try:
        _claim(root, descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _claim(root: str, descriptor: int) -> None:
    try:
        if not cache_layout.is_marked(descriptor):
            if not cache_layout.is_unclaimed(descriptor):
                raise ForeignCacheRoot(
                    f"refusing to use {display_path(root)} as the results cache: it holds files that "
                    "verify-perf did not put there (name a new or empty folder with --cache-dir or "
                    "$VERIFY_PERF_CACHE_DIR, or pass --no-cache)"
                )
            cache_layout.mark(descriptor)
    except OSError as error:
        raise UnsafeCacheRoot(f"cannot mark it as a cache ({error.strerror or error})") from None
    if _tracked_by_git(root):
        raise UnsafeCacheRoot(
            "it holds files committed to git, and entries from a commit could hide findings "
            f"(untrack them with `git rm -r --cached {display_path(root)}`)"
        )


def _tracked_by_git(root: str) -> bool:
    """True when git tracks a file under `root`: a valid-looking entry that came with a commit
    (the folder's own `.gitignore` only stops accidents) would decide which findings a run shows.
    Outside a work tree, or without git, nothing is tracked."""
    try:
        completed = subprocess.run(
            ["git", "--literal-pathspecs", "-C", root, "ls-files", "-z", "--cached", "--", "."],
            capture_output=True, check=False, timeout=30, env=git_environment(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return completed.returncode == 0 and bool(completed.stdout)


def _subfolder(parent: int, name: str, *, create: bool) -> int | None:
    if create:
        try:
            os.mkdir(name, 0o777, dir_fd=parent)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIRECTORY, dir_fd=parent)
    except FileNotFoundError:
        if create:
            raise
        return None


def _read_entry(name: str, folder: int) -> bytes:
    descriptor = os.open(name, os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=folder)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_ENTRY_SIZE:
            raise OSError(errno.EINVAL, "not a cache entry")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(_MAX_ENTRY_SIZE + 1)
        if len(data) > _MAX_ENTRY_SIZE:  # it grew after the check
            raise OSError(errno.EINVAL, "not a cache entry")
        return data
    finally:
        os.close(descriptor)


def _write_entry(folder: int, name: str, data: bytes) -> None:
    temporary = cache_layout.temporary_name(name)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o666, dir_fd=folder)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise
