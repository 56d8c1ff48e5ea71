"""What a project's ignore files leave out of discovery: `.gitignore` and `.ignore`, as ruff reads them.

Inside a git work tree, git itself says which files it ignores (`git ls-files --cached --others
--exclude-standard`): nested `.gitignore` files, `.git/info/exclude`, `core.excludesFile` and the
rule that a tracked file is never ignored all count exactly as git counts them. Outside a work
tree (an exported tree, an unpacked archive) or where git cannot answer, the `.gitignore` files
from the project root down are matched here with gitignore's rules. `.ignore` files (ripgrep's
convention, which ruff follows) are matched here everywhere and win over `.gitignore`; inside a
work tree they can only add to what git ignores, since git does not list the files it ignores.

A nested repository (a submodule, a clone inside the project) answers for its own files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from verifier.errors import UsageError
from verifier.git import git_output, nul_separated

GITIGNORE, IGNORE = ".gitignore", ".ignore"
# Larger ignore files are not ignore files a person wrote: read no more than this of one.
_MAX_IGNORE_FILE = 1024 * 1024


@dataclass(frozen=True)
class IgnorePattern:
    """One line of an ignore file, compiled: matched against a path relative to the file's folder."""

    regex: re.Pattern[str]
    negated: bool
    directory_only: bool
    # Without a `/` (other than a trailing one) a pattern names a file or folder at any depth.
    by_name: bool

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.directory_only and not is_dir:
            return False
        subject = relative.rpartition("/")[2] if self.by_name else relative
        return self.regex.fullmatch(subject) is not None


def parse_ignore_file(text: str) -> list[IgnorePattern]:
    """The patterns of an ignore file, in order (a later match wins over an earlier one)."""
    patterns = []
    for line in text.splitlines():
        pattern = _pattern(line)
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def _pattern(line: str) -> IgnorePattern | None:
    line = _without_trailing_spaces(line)
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    elif line.startswith(("\\#", "\\!")):
        line = line[1:]
    directory_only = line.endswith("/") and not line.endswith("\\/")
    if directory_only:
        line = line.rstrip("/")
    if not line:
        return None
    by_name = "/" not in line
    if line.startswith("/"):
        line = line[1:]
    try:
        regex = re.compile(_translate(line))
    except (ValueError, re.error):  # an unclosed `[`: git's matcher gives up, so it matches nothing
        return None
    return IgnorePattern(regex, negated, directory_only, by_name)


def _without_trailing_spaces(line: str) -> str:
    """Trailing spaces are dropped unless escaped with a backslash (`foo\\ `)."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "
    return stripped


def _translate(glob: str) -> str:
    """gitignore's glob as a regular expression: `*` and `?` never cross `/`; `**/` is any number
    of folders, a trailing `/**` everything inside; `[...]` a class; `\\x` the character x."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        character = glob[i]
        if character == "*":
            j = i
            while j < n and glob[j] == "*":
                j += 1
            alone = (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
            if j - i >= 2 and alone:
                if j == n:
                    out.append(".*")
                    i = j
                else:
                    out.append("(?:.*/)?")
                    i = j + 1
                continue
            out.append("[^/]*")
            i = j
        elif character == "?":
            out.append("[^/]")
            i += 1
        elif character == "[":
            klass, i = _character_class(glob, i)
            out.append(klass)
        elif character == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(character))
            i += 1
    return "".join(out)


def _character_class(glob: str, start: int) -> tuple[str, int]:
    """`[...]` from `start` (the `[`) as a regex class, and the index after it; ValueError for an
    unclosed `[`."""
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    members: list[str] = []
    first = True
    while i < len(glob) and (glob[i] != "]" or first):
        character = glob[i]
        if character == "\\" and i + 1 < len(glob):
            members.append(re.escape(glob[i + 1]))
            i += 2
        elif character == "-" and members and i + 1 < len(glob) and glob[i + 1] != "]":
            members.append("-")
            i += 1
        else:
            members.append(re.escape(character))
            i += 1
        first = False
    if i >= len(glob):
        raise ValueError("unclosed character class")
    body = "".join(members)
    return (f"[^/{body}]" if negated else f"(?!/)[{body}]"), i + 1


class PatternFiles:
    """Ignore files of some names, from a top folder down, each read once."""

    def __init__(self, top: str, names: tuple[str, ...]) -> None:
        self.top = os.path.abspath(top)
        self.names = names
        self._read: dict[str, list[IgnorePattern]] = {}

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: explicitly re-included (`!`), None: no pattern names it."""
        absolute = os.path.abspath(path)
        folders = _folders_between(self.top, os.path.dirname(absolute))
        if folders is None:
            return None
        result = None
        for folder in folders:
            relative = os.path.relpath(absolute, folder).replace(os.sep, "/")
            for pattern in self._patterns(folder):
                if pattern.matches(relative, is_dir):
                    result = not pattern.negated
        return result

    def _patterns(self, folder: str) -> list[IgnorePattern]:
        found = self._read.get(folder)
        if found is None:
            found = [pattern for name in self.names for pattern in _read_patterns(os.path.join(folder, name))]
            self._read[folder] = found
        return found


def _folders_between(top: str, folder: str) -> list[str] | None:
    """`top`, then each folder down to `folder`; None when `folder` is not at or below `top`."""
    relative = os.path.relpath(folder, top)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return None
    folders = [top]
    if relative != os.curdir:
        for part in relative.split(os.sep):
            folders.append(os.path.join(folders[-1], part))
    return folders


def _read_patterns(path: str) -> list[IgnorePattern]:
    """The patterns of one ignore file; an unreadable or missing one has none."""
    try:
        if not os.path.isfile(path):
            return []
        with open(path, "rb") as handle:
            data = handle.read(_MAX_IGNORE_FILE)
    except OSError:
        return []
    return parse_ignore_file(data.decode("utf-8", "surrogateescape"))


class _GitListing:
    """git's own view of one work tree below `folder`: the files it tracks or would track."""

    def __init__(self, folder: str, output: bytes) -> None:
        self.entries: set[str] = set()
        self.folders: set[str] = {os.path.abspath(folder)}
        for name in nul_separated(output):
            # `sub/` is an untracked repository inside this one, `sub` may be a submodule: either
            # is walked into and then answers for its own files.
            path = os.path.abspath(os.path.join(folder, name.rstrip("/")))
            self.entries.add(path)
            parent = os.path.dirname(path)
            while parent not in self.folders:
                self.folders.add(parent)
                parent = os.path.dirname(parent)

    def ignores(self, absolute: str, is_dir: bool) -> bool:
        if is_dir:
            return absolute not in self.folders and absolute not in self.entries
        return absolute not in self.entries


def git_listing(folder: str) -> _GitListing | None:
    """What git lists under `folder`, or None when it is in no work tree (or git cannot say)."""
    try:
        output = git_output(folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                            purpose="reading .gitignore")
    except UsageError:  # git is not installed: the ignore files are read here instead
        return None
    return None if output is None else _GitListing(folder, output)


class IgnoredFiles:
    """Answers "do the ignore files leave this path out?" during one walk from `root`.

    `top` is the folder from which `.gitignore` and `.ignore` files are read outside git (the
    project root when the walk starts inside it, else the walk's own root)."""

    def __init__(self, root: str, top: str | None = None) -> None:
        self._root = os.path.abspath(root)
        if top is None or _folders_between(os.path.abspath(top), self._root) is None:
            top = self._root
        self._listings: dict[str, _GitListing | None] = {self._root: git_listing(self._root)}
        self._ignore_files = PatternFiles(top, (IGNORE,))
        # Outside git, .gitignore files are read here; .ignore files come after them and win.
        self._pattern_files = PatternFiles(top, (GITIGNORE, IGNORE))
        # The walk starts below folders it never tests itself: one of them left out leaves out all.
        between = _folders_between(top, self._root)[1:]
        self._root_ignored = {
            matcher: any(matcher.verdict(folder, True) for folder in between)
            for matcher in (self._ignore_files, self._pattern_files)
        }

    def ignores(self, path: str, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        # A folder is judged by the work tree it is in, not by the repository it may hold.
        listing = self._listing_of(os.path.dirname(absolute))
        if listing is None:
            return self._matched(self._pattern_files, absolute, is_dir)
        if self._matched(self._ignore_files, absolute, is_dir):
            return True
        return listing.ignores(absolute, is_dir)

    def _matched(self, matcher: PatternFiles, absolute: str, is_dir: bool) -> bool:
        return self._root_ignored[matcher] or bool(matcher.verdict(absolute, is_dir))

    def _listing_of(self, folder: str) -> _GitListing | None:
        """The listing of the innermost work tree holding `folder`, between the root and it."""
        if folder in self._listings:
            return self._listings[folder]
        if not _is_below(folder, self._root):
            return self._listings[self._root]
        listing = git_listing(folder) if os.path.lexists(os.path.join(folder, ".git")) else None
        if listing is None:  # no repository of its own (or git cannot read it): the enclosing view
            listing = self._listing_of(os.path.dirname(folder))
        self._listings[folder] = listing
        return listing


def _is_below(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)
