"""Which files to analyse: Python files under the given paths, minus excluded folders."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from pathlib import PurePath

from verifier.errors import UsageError

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".eggs", "*.egg-info", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".verify_perf_cache", ".hypothesis", "node_modules", "site-packages", "__pypackages__",
)
PYTHON_SUFFIXES = (".py",)


def is_excluded(path: str, patterns: Iterable[str]) -> bool:
    """True when any component of `path` (or the whole path) matches an exclude pattern."""
    pure = PurePath(path)
    as_posix = pure.as_posix()
    for pattern in patterns:
        if fnmatch.fnmatch(as_posix, pattern) or fnmatch.fnmatch(as_posix, f"*/{pattern}"):
            return True
        if any(fnmatch.fnmatch(part, pattern) for part in pure.parts):
            return True
    return False


def discover(
    paths: Iterable[str],
    exclude: Iterable[str] = (),
    *,
    force_exclude: bool = False,
    unreadable: list[tuple[str, str]] | None = None,
) -> Iterator[str]:
    """Yield Python files in a stable order, each once; a file named directly is analysed even
    when an exclude pattern matches it, unless `force_exclude` (what pre-commit, which names files, needs).

    Raises UsageError for a path that does not exist or a named file that is not Python.
    A folder that cannot be listed is appended to `unreadable` as (path, reason), never skipped
    silently.
    """
    patterns = tuple(DEFAULT_EXCLUDES) + tuple(exclude)
    seen: set[str] = set()

    def first_time(path: str) -> bool:
        identity = os.path.normcase(os.path.abspath(path))
        if identity in seen:
            return False
        seen.add(identity)
        return True

    for raw in paths:
        if not os.path.lexists(raw):
            raise UsageError(f"{display_path(raw)}: no such file or directory")
        if os.path.isdir(raw):
            yield from filter(first_time, _walk(raw, patterns, unreadable))
        elif os.path.isfile(raw) or (os.path.islink(raw) and not os.path.exists(raw)):
            if not raw.endswith(PYTHON_SUFFIXES):
                raise UsageError(f"{display_path(raw)}: not a Python file (expected a .py file or a folder)")
            path = os.path.normpath(raw)
            if force_exclude and is_excluded(path, patterns):
                continue
            if first_time(path):
                yield path
        else:
            raise UsageError(f"{display_path(raw)}: not a regular file or directory")


def _walk(root: str, patterns: tuple[str, ...], unreadable: list[tuple[str, str]] | None) -> Iterator[str]:
    def report(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((os.path.normpath(error.filename or root), f"cannot read folder: {error.strerror or error}"))

    # followlinks=False: a symlinked folder (or a loop of them) is never walked into.
    # Patterns match below the root the user named, so a checkout inside `~/env/` still works.
    for folder, dirnames, filenames in os.walk(root, onerror=report, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames
            if not is_excluded(os.path.relpath(os.path.join(folder, d), root), patterns)
        )
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                path = os.path.join(folder, name)
                # FIFOs and devices would block or stream forever; links (even dangling) are reported.
                if not (os.path.isfile(path) or os.path.islink(path)):
                    continue
                if not is_excluded(os.path.relpath(path, root), patterns):
                    yield os.path.normpath(path)


def display_path(path: str) -> str:
    """`path` as valid Unicode for every output: bytes that are not UTF-8 (kept by the file
    system encoding as surrogates) are shown as `\\xNN` escapes."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def module_name_for(path: str) -> str:
    """`pkg.sub.mod` for pkg/sub/mod.py inside packages (folders with __init__.py); else the stem."""
    folder, filename = os.path.split(os.path.abspath(path))
    parts = [] if filename == "__init__.py" else [filename[: -len(".py")] if filename.endswith(".py") else filename]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.append(package)
    return ".".join(reversed(parts))
