"""The pre-merge mode (`--diff BASE`): which files and lines changed since a git ref.

Changes are taken against the merge base of BASE and HEAD, working tree included, so a pull
request is judged on what it adds, not on what landed on the base branch meanwhile. Untracked
files (not ignored) count as wholly changed. Only line numbers of the new side are kept.
File names come from `-z` output, never from the patch headers git quotes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from verifier.errors import UsageError
from verifier.findings import Finding
from verifier.git import git_output, nul_separated, run_git, top_level

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@", re.MULTILINE)
WHOLE_FILE = frozenset({0})
"""Marker for a file whose every line counts as changed (untracked or newly added)."""


def changed_lines(base: str, where: str) -> dict[str, frozenset[int]]:
    """Map each changed file (real path) to its changed line numbers on the new side."""
    top = top_level(where)
    if top is None:
        folder = where if os.path.isdir(where) else os.path.dirname(os.path.abspath(where))
        run_git(folder, "rev-parse", "--show-toplevel")  # raises with git's own reason
        raise UsageError(f"--diff: {where} is not inside a git work tree")
    if git_output(top, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}") is None:
        raise UsageError(f"--diff {base}: not a commit in {top} (fetch it first, e.g. `git fetch origin {base}`)")
    # No common history (e.g. an orphan branch): compare with BASE itself.
    found = git_output(top, "merge-base", base, "HEAD")
    merge_base = found.decode().strip() if found else base
    changed: dict[str, frozenset[int]] = {}
    status = nul_separated(run_git(
        top, "diff", "--name-status", "-z", "--no-ext-diff", "--find-renames", "--diff-filter=AMR", merge_base, "--"
    ))
    for names in _status_records(status):
        patch = run_git(top, "diff", "--no-color", "--no-ext-diff", "--unified=0", "--find-renames", merge_base, "--", *names)
        lines = hunk_lines(patch)
        if lines:
            changed[os.path.realpath(os.path.join(top, names[-1]))] = lines
    untracked = run_git(top, "ls-files", "--others", "--exclude-standard", "-z")
    for path in nul_separated(untracked):
        changed[os.path.realpath(os.path.join(top, path))] = WHOLE_FILE
    return changed


def _status_records(fields: list[str]) -> Iterable[tuple[str, ...]]:
    """(path,) per added or modified file and (old, new) per rename, from `--name-status -z`."""
    position = 0
    while position < len(fields):
        status = fields[position]
        width = 2 if status[:1] in ("R", "C") else 1
        yield tuple(fields[position + 1 : position + 1 + width])
        position += 1 + width


def hunk_lines(patch: bytes) -> frozenset[int]:
    """Changed new-side line numbers in one file's `git diff --unified=0` output."""
    lines: set[int] = set()
    for hunk in _HUNK.finditer(patch):
        start = int(hunk["start"])
        count = 1 if hunk["count"] is None else int(hunk["count"])
        lines.update(range(start, start + count))
    return frozenset(lines)


def select_changed(files: Iterable[str], changed: dict[str, frozenset[int]]) -> list[str]:
    return [path for path in files if os.path.realpath(path) in changed]


def on_changed_lines(findings: Iterable[Finding], changed: dict[str, frozenset[int]]) -> list[Finding]:
    """Findings that touch a changed line; a file-level finding (VP900) counts for its whole file."""
    kept = []
    for finding in findings:
        lines = changed.get(os.path.realpath(finding.path))
        if lines is None:
            continue
        span = range(finding.line, max(finding.line, finding.end_line) + 1)
        # A notebook's diff is a diff of its JSON: a changed notebook counts as wholly changed.
        whole = lines is WHOLE_FILE or finding.code == "VP900" or finding.cell is not None
        if whole or any(n in lines for n in span):
            kept.append(finding)
    return kept
