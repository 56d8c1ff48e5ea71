"""`--add-noqa`: adopt the gate on an existing code base by suppressing today's findings in place.

Each finding gets `# verify-perf: ignore[CODE]` on its first line (merged into a directive
already in that line's comment, never into a string that only looks like one), or, when that line ends inside a string or continues with a backslash (where a
comment would change the code), on the line that string or continuation ends on, as in ruff. A
bare `# verify-perf: ignore` there silences nothing, so it gets the codes. When the project
requires reasons, a directive without one gets `-- existing finding, suppressed by --add-noqa`,
which says what happened and is easy to find again. Files keep their encoding, line endings and
permissions; they are replaced atomically. The audit's own findings (VP900-VP902) are not
suppressed: they say the file or a comment needs fixing.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from verifier.findings import Finding
from verifier.static.discovery import display_path
from verifier.static.comments import comments
from verifier.static.source import UnreadableSource, decode_source, read_bytes
from verifier.static.suppression import comment_lines
from verifier.writing import replace_file_bytes

_OURS = re.compile(
    r"#\s*verify-perf\s*:\s*ignore(?P<bracket>\[[^\]]*\])?(?P<reason>[ \t,]*--\s*[^\s#])?", re.IGNORECASE
)
ADDED_REASON = "existing finding, suppressed by --add-noqa"


@dataclass(frozen=True)
class Added:
    directives: int
    files: int
    skipped: tuple[Finding, ...]


def add_suppressions(findings: Iterable[Finding], *, with_reason: bool = False) -> Added:
    """Suppress each finding in place; `with_reason`: the project requires a reason after the codes."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    directives = files = 0
    skipped: list[Finding] = []
    for finding in findings:
        if finding.cell is not None:
            skipped.append(finding)  # a notebook is JSON: its cells are not edited here
        elif not finding.code.startswith("VP9"):
            # A file reached through a symbolic link too is edited once.
            by_path[os.path.realpath(finding.path)].append(finding)
    for key in sorted(by_path):
        added, left = _add_to_file(by_path[key][0].path, by_path[key], with_reason)
        directives += added
        files += bool(added)
        skipped += left
    return Added(directives, files, tuple(skipped))


def _add_to_file(path: str, findings: list[Finding], with_reason: bool) -> tuple[int, list[Finding]]:
    try:
        source = decode_source(read_bytes(path))
    except UnreadableSource:
        return 0, findings
    moved = comment_lines(source.lines(), source.text)
    codes_by_line: dict[int, set[str]] = defaultdict(set)
    skipped = []
    for finding in findings:
        line = moved.get(finding.line, finding.line)
        if line in moved:
            skipped.append(finding)
        else:
            codes_by_line[line].add(finding.code)
    # The column of each line's comment: a directive is looked for there, not in a string.
    comment_at = {line: column for line, column, _ in comments(source.text)}
    # utf-8-sig would write a BOM before every edited line; the BOM stays in the first line's bytes.
    codec = "utf-8" if source.encoding == "utf-8-sig" else source.encoding
    # bytes.splitlines breaks at `\r\n`, `\r` and `\n` only: Python's lines, as the findings count them.
    lines = source.data.splitlines(keepends=True)
    added = 0
    for number, codes in codes_by_line.items():
        if not 1 <= number <= len(lines):
            continue
        raw = lines[number - 1]
        body = raw.rstrip(b"\r\n")
        ending = raw[len(body):]
        text = body.decode(codec)
        column = comment_at.get(number)
        if column is not None and number == 1 and text.startswith("\ufeff"):
            column += 1  # the decoded source text has no BOM; this line's text still does
        edited = _with_directive(text, sorted(codes), column, with_reason)
        if edited != text:
            lines[number - 1] = edited.encode(codec) + ending
            added += 1
    if added:
        replace_file_bytes(path, b"".join(lines))
    return added, skipped


def _with_directive(line: str, codes: list[str], comment_column: int | None, with_reason: bool) -> str:
    """`line` with the codes added: merged into our directive in its comment (which starts at
    `comment_column`), else appended as a new one; with a reason where one is required."""
    existing = _OURS.search(line, comment_column) if comment_column is not None else None
    reason = f" -- {ADDED_REASON}" if with_reason else ""
    if existing is None:
        return f"{line.rstrip()}  # verify-perf: ignore[{', '.join(codes)}]{reason}"
    listed = [c.strip() for c in (existing.group("bracket") or "[]")[1:-1].split(",") if c.strip()]
    merged = listed + [code for code in codes if code not in {c.upper() for c in listed}]
    if existing.group("reason") is not None:
        reason = ""
    if existing.group("bracket") is None:
        end = existing.end()
        return f"{line[:end]}[{', '.join(merged)}]{reason}{line[end:]}"
    start, end = existing.span("bracket")
    return f"{line[:start]}[{', '.join(merged)}]{reason}{line[end:]}"


def print_summary(result: Added) -> None:
    noun = "suppression" if result.directives == 1 else "suppressions"
    files = "file" if result.files == 1 else "files"
    print(f"Added {result.directives} {noun} to {result.files} {files}.", file=sys.stderr)
    for finding in result.skipped:
        why = "notebooks are not edited" if finding.cell is not None else "no line after it can carry a comment"
        print(
            f"verify-perf: warning: {display_path(finding.location)}: {finding.code} not suppressed: {why}",
            file=sys.stderr,
        )
