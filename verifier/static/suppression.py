"""Suppression comments: `# verify-perf: ignore[VP201]`, `# noqa: VP201`, or bare forms for all."""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(
    r"#\s*(?:verify-perf\s*:\s*ignore(?:\[(?P<bracket>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[\w\-, ]+))?)",
    re.IGNORECASE,
)


def suppressed_codes(line: str) -> set[str] | None:
    """The codes a line suppresses; an empty set means "everything"; None means no directive."""
    found: set[str] | None = None
    for match in _DIRECTIVE.finditer(line):
        listed = match.group("bracket") if match.group("bracket") is not None else match.group("noqa")
        codes = {c.strip().upper() for c in re.split(r"[,\s]+", listed or "") if c.strip()}
        if not codes:
            return set()
        found = (found or set()) | codes
    return found


def is_suppressed(lines: list[str], first_line: int, last_line: int, code: str, name: str) -> bool:
    """True when the first or last line of a finding carries a directive naming it (or all)."""
    for number in {first_line, last_line}:
        if not 1 <= number <= len(lines) or "#" not in lines[number - 1]:
            continue
        codes = suppressed_codes(lines[number - 1])
        if codes is not None and (not codes or code in codes or name.upper() in codes):
            return True
    return False
