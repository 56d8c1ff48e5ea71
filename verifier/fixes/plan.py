"""Which fixes to apply together, file by file.

Two fixes whose edits overlap cannot both be applied to the same text: the one whose first edit
comes first in the file (then the lower rule code) is applied, the other waits for the next round,
when the file is analysed again and its finding, if it is still there, offers a fix that fits the
new text. The order depends on positions and codes only, so the outcome is the same every run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

from verifier.findings import Edit, Finding


def choose_fixes(findings: Iterable[Finding], *, unsafe: bool, skip: Collection[str] = ()) -> dict[str, list[Finding]]:
    """Per file (in path order), the findings whose fixes apply in this run (safe ones, and
    unsafe ones when `unsafe`) and do not overlap an earlier one; files in `skip` are left out."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        fix = finding.autofix
        if fix is not None and fix.edits and fix.applies(unsafe) and finding.path not in skip:
            by_path[finding.path].append(finding)
    chosen: dict[str, list[Finding]] = {}
    for path in sorted(by_path):
        taken: list[Edit] = []
        kept = []
        for finding in sorted(by_path[path], key=_order):
            edits = finding.autofix.edits
            if not any(_overlap(edit, other) for edit in edits for other in taken):
                taken.extend(edits)
                kept.append(finding)
        chosen[path] = kept
    return chosen


def _order(finding: Finding) -> tuple:
    first = min((edit.line, edit.column) for edit in finding.autofix.edits)
    return first, finding.code, finding.line, finding.column


def _overlap(one: Edit, other: Edit) -> bool:
    """The two spans share a character (spans touching end to start do not)."""
    return (one.line, one.column) < (other.end_line, other.end_column) and (
        (other.line, other.column) < (one.end_line, one.end_column)
    )
