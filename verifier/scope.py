"""Which files a run analyses, and which it reports.

Heat belongs to the project, not to the paths a user names: a helper is step code because a
loop in another file calls it. So a run analyses every Python file of the project (the folder
of the config file, else the git top level) and reports only the files under the named paths;
the results cache makes the rest of an unchanged tree nearly free.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from verifier.git import top_level
from verifier.static.discovery import discover
from verifier.static.patterns import PathPattern


@dataclass(frozen=True)
class Scope:
    root: str | None
    analysed: list[str]
    reported: list[str]
    # Folders that could not be listed (path, reason): reported, never skipped in silence.
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    # Python files under the named paths that .gitignore or .ignore leave out.
    ignored: list[str] = field(default_factory=list)


def project_root(first_path: str, config_path: str | None) -> str | None:
    """The folder of the config file in use, else the git work tree of the first path."""
    if config_path is not None:
        return os.path.dirname(os.path.abspath(config_path))
    return top_level(first_path)


def find_scope(
    paths: Sequence[str],
    exclude: Sequence[PathPattern],
    *,
    root: str | None,
    force_exclude: bool = False,
    boundary: str | None = None,
    respect_ignore_files: bool = True,
) -> Scope:
    """Reported files from `paths`; analysed files are those plus the rest of `root`'s tree.

    With `force_exclude`, excludes apply to named files and their folders below `boundary`.
    With `respect_ignore_files`, what `.gitignore` and `.ignore` leave out is neither reported nor
    analysed for heat."""
    unreadable: list[tuple[str, str]] = []
    ignored: list[str] = []
    reported = list(discover(
        paths, exclude, force_exclude=force_exclude, boundary=boundary or root, unreadable=unreadable,
        respect_ignore_files=respect_ignore_files, ignored_files=ignored,
    ))
    if root is None:
        return Scope(None, reported, reported, unreadable, ignored)
    seen = {os.path.realpath(path) for path in reported}
    analysed = list(reported)
    # Folders of the project outside the named paths only lend heat: they cannot hide a finding.
    for path in discover([relative_to_cwd(root)], exclude, respect_ignore_files=respect_ignore_files):
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            analysed.append(path)
    return Scope(root, analysed, reported, unreadable, ignored)


def relative_to_cwd(path: str) -> str:
    """Relative to the working directory when below it (short, and the same on every machine)."""
    relative = os.path.relpath(path)
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative
