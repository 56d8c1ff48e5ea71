"""The pre-merge mode (`--diff BASE`): which files and lines changed since a git ref.

Changes are taken against the merge base of BASE and HEAD, working tree included, so a pull
request is judged on what it adds, not on what landed on the base branch meanwhile. Untracked
files (not ignored) count as wholly changed. Only line numbers of the new side are kept.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable

from verifier.findings import Finding
from verifier.errors import UsageError

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<count>\d+))? @@")
WHOLE_FILE = frozenset({0})
"""Marker for a file whose every line counts as changed (untracked or newly added)."""


def changed_lines(base: str, where: str) -> dict[str, frozenset[int]]:
    """Map each changed file (real path) to its changed line numbers on the new side."""
    folder = where if os.path.isdir(where) else os.path.dirname(os.path.abspath(where))
    top = _git(folder, "rev-parse", "--show-toplevel").strip()
    if not _succeeds(top, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"):
        raise UsageError(f"--diff {base}: not a commit in {top} (fetch it first, e.g. `git fetch origin {base}`)")
    merge_base = _git(top, "merge-base", base, "HEAD", allowed_failure=True).strip() or base
    diff = _git(top, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--unified=0",
                "--find-renames", "--diff-filter=AMR", merge_base, "--")
    changed = {os.path.realpath(os.path.join(top, path)): lines for path, lines in parse_diff(diff).items()}
    untracked = _git(top, "-c", "core.quotePath=false", "ls-files", "--others", "--exclude-standard", "-z")
    for path in filter(None, untracked.split("\0")):
        changed[os.path.realpath(os.path.join(top, path))] = WHOLE_FILE
    return changed


def parse_diff(diff: str) -> dict[str, frozenset[int]]:
    """Changed new-side lines per path from `git diff --unified=0` output."""
    result: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = _unquote(line[4:])
            current = None if target == "/dev/null" else result.setdefault(target.removeprefix("b/"), set())
        elif current is not None and (hunk := _HUNK.match(line)):
            start = int(hunk["start"])
            count = 1 if hunk["count"] is None else int(hunk["count"])
            current.update(range(start, start + count))
    return {path: frozenset(lines) for path, lines in result.items() if lines}


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
        if lines is WHOLE_FILE or finding.code == "VP900" or any(n in lines for n in span):
            kept.append(finding)
    return kept


def _git(folder: str, *args: str, allowed_failure: bool = False) -> str:
    try:
        completed = subprocess.run(
            ["git", "-C", folder, *args], capture_output=True, text=True, encoding="utf-8",
            errors="surrogateescape", check=False,
        )
    except FileNotFoundError:
        raise UsageError("--diff needs git, which is not on PATH") from None
    if completed.returncode != 0 and not allowed_failure:
        detail = completed.stderr.strip().splitlines()
        raise UsageError(f"--diff: git failed in {folder}: {detail[-1] if detail else 'no message'}")
    return completed.stdout if completed.returncode == 0 else ""


def _succeeds(folder: str, *args: str) -> bool:
    return subprocess.run(["git", "-C", folder, *args], capture_output=True, check=False).returncode == 0


def _unquote(name: str) -> str:
    # git quotes names holding `"`, `\` or control characters, C style.
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return name
