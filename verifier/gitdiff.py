"""The pre-merge mode (`--diff BASE`): the merge base a change is judged against, and which
files and lines changed since then.

Diff mode reports what the change made new anywhere (`verifier.diffbase` analyses the merge
base's tree); the changed lines still decide what a suppression comment on them counts for, and
a changed file that cannot be analysed is always reported. Changes are taken against the merge
base of BASE and HEAD, working tree included, so a pull request is judged on what it adds, not on
what landed on the base branch meanwhile. Untracked files (not ignored) count as wholly changed.
Only line numbers of the new side are kept.

Git's facts, never its presentation, which the change itself could steer: file names come from
`--name-status -z` with every status (a symlink that became a file is a type change, `T`) and no
rename guessing (a renamed file is new at its new path); line numbers come from a diff that
ignores attributes and drivers (`--text`, no textconv, no external diff), so adding `*.py -diff`
or `*.py binary` to `.gitattributes` hides no line. Each path is its own entry: a symbolic link
that changed counts as wholly changed under its own name and never replaces the lines of the
file it points to. Every named path's work tree is asked, so two repositories both count.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from verifier.errors import UsageError
from verifier.findings import Finding
from verifier.git import git_output, nul_separated, run_git, top_level

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@", re.MULTILINE)
WHOLE_FILE = frozenset({0})
"""Marker for a file whose every line counts as changed (untracked or newly added)."""
# How a diff is read for its line numbers: the same for every file, whatever the attributes say.
_LINE_DIFF = (
    "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames", "--unified=0",
    "--inter-hunk-context=0",
)


@dataclass
class Changes:
    """What changed, by path: the new-side lines of each file, and folders whose every file is
    new (a nested repository the work tree does not track, a submodule that moved)."""

    files: dict[str, frozenset[int]] = field(default_factory=dict)
    folders: set[str] = field(default_factory=set)

    def lines_of(self, path: str) -> frozenset[int] | None:
        """The changed lines of the file at `path` (WHOLE_FILE: all), None when it did not change.
        A symbolic link that did not change itself shows the changes of the file it names."""
        found = self.files.get(identity(path))
        if found is None and os.path.islink(path):
            found = self.files.get(os.path.realpath(path))
        if found is None and self.folders:
            real = os.path.realpath(path)
            if any(real.startswith(folder + os.sep) for folder in self.folders):
                return WHOLE_FILE
        return found

    def add(self, path: str, lines: frozenset[int]) -> None:
        known = self.files.get(path)
        if known is None or lines is WHOLE_FILE:
            self.files[path] = lines
        elif known is not WHOLE_FILE:
            self.files[path] = known | lines


def identity(path: str) -> str:
    """The path with its folders resolved and its own name kept: a link and the file it names
    are two entries, while a file reached through a linked folder is the file itself."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(folder), name)


def changed_lines(base: str, paths: Sequence[str]) -> Changes:
    """The changes since `base` in the work tree of every path in `paths`."""
    changes = Changes()
    for top in work_trees(base, paths):
        _add_changes(changes, top, base)
    return changes


def work_trees(base: str, paths: Sequence[str]) -> list[str]:
    """The git work trees of `paths`, each once, in order; a usage error for a ref that could be
    read as an option or a path outside any work tree."""
    if base.startswith("-"):
        raise UsageError(f"--diff {base!r}: a git ref cannot start with '-'")
    return list(dict.fromkeys(_work_tree(path) for path in paths))


# git's tree with nothing in it: the base of a repository with no commit yet.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def merge_base(top: str, base: str) -> str:
    """The commit a change on HEAD is judged against: the merge base of `base` and HEAD, or
    `base` itself when they share no history. Before a first commit (`--diff HEAD` in a new
    repository's pre-commit hook) everything is new: the empty tree."""
    if base == "HEAD" and _unborn(top):
        return EMPTY_TREE
    if git_output(top, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}") is None:
        raise UsageError(f"--diff {base}: not a commit in {top} (fetch it first, e.g. `git fetch origin {base}`)")
    found = git_output(top, "merge-base", base, "HEAD")
    return found.decode().strip() if found else base


def _unborn(top: str) -> bool:
    """HEAD names a branch with no commit yet."""
    no_commit = git_output(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") is None
    return no_commit and git_output(top, "symbolic-ref", "--quiet", "HEAD") is not None


def _work_tree(path: str) -> str:
    top = top_level(path)
    if top is None:
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        run_git(folder, "rev-parse", "--show-toplevel")  # raises with git's own reason
        raise UsageError(f"--diff: {path} is not inside a git work tree")
    return top


def _add_changes(changes: Changes, top: str, base: str) -> None:
    merge_base_commit = merge_base(top, base)
    status = nul_separated(run_git(
        top, "diff", "--name-status", "-z", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", merge_base_commit, "--"
    ))
    for kind, name in _status_records(status):
        if kind == "D":
            continue
        path = os.path.join(top, name)
        if os.path.islink(path):
            # A new or retargeted link puts code at a new name: all of it is new there.
            changes.add(identity(path), WHOLE_FILE)
        elif os.path.isdir(path):
            changes.folders.add(os.path.realpath(path))  # a submodule that moved: its files are new here
        else:
            lines = hunk_lines(run_git(top, *_LINE_DIFF, merge_base_commit, "--", name))
            if lines:
                changes.add(identity(path), lines)
    untracked = run_git(top, "ls-files", "--others", "--exclude-standard", "-z")
    for name in nul_separated(untracked):
        path = os.path.join(top, name)
        if name.endswith("/"):
            changes.folders.add(os.path.realpath(path))  # a repository of its own, new to this one
        else:
            changes.add(identity(path), WHOLE_FILE)


def _status_records(fields: list[str]) -> Iterable[tuple[str, str]]:
    """(status letter, path) per record of `--name-status -z --no-renames`: every status has one
    path; a rename or copy (should a git ignore --no-renames) yields its new path."""
    position = 0
    while position < len(fields):
        status = fields[position]
        width = 2 if status[:1] in ("R", "C") else 1
        yield status[:1], fields[position + width]
        position += 1 + width


def hunk_lines(patch: bytes) -> frozenset[int]:
    """Changed new-side line numbers in one file's `git diff --unified=0` output."""
    lines: set[int] = set()
    for hunk in _HUNK.finditer(patch):
        start = int(hunk["start"])
        count = 1 if hunk["count"] is None else int(hunk["count"])
        lines.update(range(start, start + count))
    return frozenset(lines)


def on_changed_lines(findings: Iterable[Finding], changes: Changes) -> list[Finding]:
    """Findings that touch a changed line; a file-level finding (VP900) counts for its whole file."""
    kept = []
    for finding in findings:
        lines = changes.lines_of(finding.path)
        if lines is None:
            continue
        span = range(finding.line, max(finding.line, finding.end_line) + 1)
        # A notebook's diff is a diff of its JSON: a changed notebook counts as wholly changed.
        whole = lines is WHOLE_FILE or finding.code == "VP900" or finding.cell is not None
        if whole or any(n in lines for n in span):
            kept.append(finding)
    return kept
