"""`--statistics`: how many findings each rule produced, most frequent first (ruff's table)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from verifier.findings import Finding, Severity
from verifier.report.file_names import json_safe
from verifier.report.model import Report


@dataclass(frozen=True)
class RuleCount:
    code: str
    name: str
    count: int
    severities: dict[str, int]


def rule_counts(findings: list[Finding]) -> list[RuleCount]:
    by_code: dict[str, list[Finding]] = {}
    for finding in findings:
        by_code.setdefault(finding.code, []).append(finding)
    rows = []
    for code, group in by_code.items():
        levels = Counter(f.severity for f in group)
        severities = {s.name: levels[s] for s in sorted(Severity, reverse=True) if levels[s]}
        rows.append(RuleCount(code, group[0].name, len(group), severities))
    return sorted(rows, key=lambda row: (-row.count, row.code))


def render_statistics_text(report: Report, *, summary: list[str]) -> str:
    rows = rule_counts(list(report.findings))
    width = max((len(str(row.count)) for row in rows), default=1)
    lines = [
        f"{row.count:>{width}}\t{row.code}\t{row.name}\t"
        + ", ".join(f"{n} {name}" for name, n in row.severities.items())
        for row in rows
    ]
    return "\n".join([*lines, *summary]) + "\n"


def render_statistics_json(report: Report) -> str:
    rows = [
        {"code": row.code, "name": row.name, "count": row.count, "severities": row.severities}
        for row in rule_counts(list(report.findings))
    ]
    return json_safe(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n"
