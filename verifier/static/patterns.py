"""Glob patterns for files and folders (`exclude`, `per-file-ignores`), anchored as ruff anchors them.

A pattern without a `/` names a file or folder anywhere (`build`, `*_pb2.py`). A pattern with a
`/` is a path relative to the folder of the config file that declares it (the working directory
for the command line), so `legacy/*` means the same files whichever folder verify-perf runs from.
`*` may cross `/`.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PathPattern:
    glob: str
    # The folder of the declaring config file (absolute): a pattern with a `/` is relative to it,
    # and a bare name is looked for in the folders below it.
    anchor: str = ""

    @classmethod
    def at(cls, glob: str, anchor: str) -> PathPattern:
        text = glob.replace("\\", "/")
        text = text.rstrip("/") or text
        if text.startswith("./"):
            text = text[2:]
        return cls(text, os.path.abspath(anchor) if anchor else "")

    @property
    def names_anywhere(self) -> bool:
        return "/" not in self.glob

    def matches(self, path: str) -> bool:
        """Does the pattern name this file or folder itself (not one of its parents)?"""
        if self.names_anywhere:
            name = os.path.basename(path)
            if name in ("", ".", ".."):  # `train/`, `.`: the folder's own name
                name = os.path.basename(os.path.abspath(path))
            return fnmatch.fnmatch(name, self.glob)
        absolute = os.path.abspath(path)
        full = self.glob if self.glob.startswith("/") else posixpath.join(_posix(self.anchor), self.glob)
        return fnmatch.fnmatch(_posix(absolute), posixpath.normpath(full))

    def __str__(self) -> str:
        if self.names_anywhere or self.glob.startswith("/"):
            return self.glob
        return posixpath.join(_posix(self.anchor), self.glob)


def as_patterns(items: Iterable[PathPattern | str], anchor: str = ".") -> tuple[PathPattern, ...]:
    """Patterns from the command line (plain strings) are anchored at the working directory."""
    return tuple(item if isinstance(item, PathPattern) else PathPattern.at(item, anchor) for item in items)


def matches_path(path: str, patterns: Iterable[PathPattern], boundary: str | None) -> bool:
    """Does any pattern name `path` or one of its folders below `boundary` (exclusive)?

    Without a boundary only `path` itself is tested: a checkout inside `~/env/` is not excluded
    because of a folder above the project.
    """
    patterns = tuple(patterns)
    current = os.path.abspath(path)
    stop = os.path.abspath(boundary) if boundary is not None else None
    while True:
        if any(pattern.matches(current) for pattern in patterns):
            return True
        parent = os.path.dirname(current)
        if stop is None or not _is_below(parent, stop):
            return False
        current = parent


def _is_below(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")
