"""Which files to analyse: Python files under the given paths, minus excluded folders and what
the project's `.gitignore` and `.ignore` files leave out (`ignore_files`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from verifier.errors import UsageError
from verifier.static.ignore_files import IgnoredFiles
from verifier.static.patterns import PathPattern, as_patterns, matches_path
from verifier.static.source import has_stand_in

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", "build", "dist",
    ".eggs", "*.egg-info", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".verify_perf_cache", ".hypothesis", "node_modules", "site-packages", "__pypackages__",
)
PYTHON_SUFFIXES = (".py", ".ipynb")  # notebooks: their code cells (verifier/static/notebook.py)


DEFAULT_EXCLUDE_PATTERNS = tuple(PathPattern.at(name, "") for name in DEFAULT_EXCLUDES)


def is_excluded(path: str, patterns: Iterable[PathPattern | str]) -> bool:
    """True when a pattern names this file or folder itself (its parents were tested on the way in)."""
    return any(pattern.matches(path) for pattern in as_patterns(patterns))


def discover(
    paths: Iterable[str],
    exclude: Iterable[PathPattern | str] = (),
    *,
    force_exclude: bool = False,
    boundary: str | None = None,
    unreadable: list[tuple[str, str]] | None = None,
    respect_ignore_files: bool = True,
    ignored_files: list[str] | None = None,
) -> Iterator[str]:
    """Yield Python files in a stable order, each once; a file named directly is analysed even
    when an exclude pattern matches it, unless `force_exclude` (what pre-commit, which names files, needs).
    In a folder, files that `.gitignore` or `.ignore` leave out are skipped unless not
    `respect_ignore_files`; a file named directly is analysed whatever they say, as ruff does.
    Python files they leave out are appended to `ignored_files` (files in a folder left out
    whole are not looked for).

    With `force_exclude`, a named file is skipped when a pattern names it or one of its folders
    below `boundary` (the project root). Patterns given as strings are anchored at the working
    directory. Raises UsageError for a path that does not exist or a named file that is not Python.
    A folder that cannot be listed is appended to `unreadable` as (path, reason), never skipped
    silently.
    """
    patterns = DEFAULT_EXCLUDE_PATTERNS + as_patterns(exclude)
    seen: set[str] = set()

    def first_time(path: str) -> bool:
        identity = os.path.normcase(os.path.abspath(path))
        if identity in seen:
            return False
        seen.add(identity)
        return True

    for raw in paths:
        if not os.path.lexists(raw) and not has_stand_in(raw):
            raise UsageError(f"{display_path(raw)}: no such file or directory")
        if os.path.isdir(raw):
            # Ignore files are read from the project root (else the working directory) down.
            top = boundary if boundary is not None else _cwd_if_below(raw)
            ignored = IgnoredFiles(raw, top) if respect_ignore_files else None
            yield from filter(first_time, _walk(raw, patterns, unreadable, ignored, ignored_files))
        elif os.path.isfile(raw) or os.path.islink(raw) or raw.endswith(PYTHON_SUFFIXES):
            # A FIFO, device or socket named like Python (or a link to one) is reported as a folder
            # scan reports it (VP900, never read); one that is not named like Python is no input.
            if not raw.endswith(PYTHON_SUFFIXES):
                raise UsageError(f"{display_path(raw)}: not a Python file (expected a .py file, a .ipynb notebook or a folder)")
            path = os.path.normpath(raw)
            if force_exclude and matches_path(path, patterns, boundary if boundary is not None else _cwd_if_below(path)):
                continue
            if first_time(path):
                yield path
        else:
            raise UsageError(f"{display_path(raw)}: not a regular file or directory")


def _cwd_if_below(path: str) -> str | None:
    """Without a project root, folders between the working directory and a named file count."""
    here = os.getcwd()
    return here if os.path.abspath(path).startswith(here.rstrip(os.sep) + os.sep) else None


def _walk(
    root: str,
    patterns: tuple[PathPattern, ...],
    unreadable: list[tuple[str, str]] | None,
    ignored: IgnoredFiles | None,
    ignored_files: list[str] | None,
) -> Iterator[str]:
    def report(error: OSError) -> None:
        if unreadable is not None:
            unreadable.append((os.path.normpath(error.filename or root), f"cannot read folder: {error.strerror or error}"))

    # followlinks=False: a symlinked folder (or a loop of them) is never walked into.
    # Only folders below the root the user named are tested, so a checkout inside `~/env/` works.
    for folder, dirnames, filenames in os.walk(root, onerror=report, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames
            if not is_excluded(os.path.join(folder, d), patterns)
            and not (ignored is not None and ignored.ignores(os.path.join(folder, d), is_dir=True))
        )
        for name in sorted(filenames):
            # A FIFO, device or socket named like Python is listed too: reading one is refused
            # without blocking (`source.read_bytes`), and the file is reported, never skipped in silence.
            if name.endswith(PYTHON_SUFFIXES):
                path = os.path.join(folder, name)
                if is_excluded(path, patterns):
                    continue
                if ignored is not None and ignored.ignores(path, is_dir=False):
                    if ignored_files is not None:
                        ignored_files.append(os.path.normpath(path))
                    continue
                yield os.path.normpath(path)


def display_path(path: str) -> str:
    """`path` as valid Unicode for every output: bytes that are not UTF-8 (kept by the file
    system encoding as surrogates) are shown as `\\xNN` escapes."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")


def import_root_for(path: str) -> str:
    """The folder Python imports `path` from: its own folder for a script, the folder above the
    top package for a module in packages. Two `main.py` in two script folders are two modules."""
    folder = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


def module_name_for(path: str) -> str:
    """`pkg.sub.mod` for pkg/sub/mod.py inside packages (folders with __init__.py); else the stem."""
    folder, filename = os.path.split(os.path.abspath(path))
    stem = next((filename[: -len(suffix)] for suffix in PYTHON_SUFFIXES if filename.endswith(suffix)), filename)
    parts = [] if filename == "__init__.py" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.append(package)
    return ".".join(reversed(parts))
