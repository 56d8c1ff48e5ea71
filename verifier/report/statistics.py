"""`--statistics`: how many findings each rule produced, most frequent first (ruff's table), and
at which heat: a rule's findings in the step loop and in the evaluation loop are different work.

Text: one line per rule and heat (`2	VP201	sync-in-hot-loop	step	2 HIGH`), a rule's heats hottest
first. JSON: one object per rule, its heats under `heats`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from verifier.findings import Finding, Heat, Severity
from verifier.report.file_names import json_safe
from verifier.report.model import Report


@dataclass(frozen=True)
class HeatCount:
    heat: Heat
    count: int
    severities: dict[str, int]


@dataclass(frozen=True)
class RuleCount:
    code: str
    name: str
    count: int
    severities: dict[str, int]
    heats: tuple[HeatCount, ...] = ()


def rule_counts(findings: list[Finding]) -> list[RuleCount]:
    by_code: dict[str, list[Finding]] = {}
    for finding in findings:
        by_code.setdefault(finding.code, []).append(finding)
    rows = []
    for code, group in by_code.items():
        heats = tuple(
            HeatCount(heat, len(at), _severities(at))
            for heat in sorted(Heat, reverse=True)
            if (at := [f for f in group if f.heat is heat])
        )
        rows.append(RuleCount(code, group[0].name, len(group), _severities(group), heats))
    return sorted(rows, key=lambda row: (-row.count, row.code))


def _severities(findings: list[Finding]) -> dict[str, int]:
    levels = Counter(f.severity for f in findings)
    return {s.name: levels[s] for s in sorted(Severity, reverse=True) if levels[s]}


def render_statistics_text(report: Report, *, summary: list[str]) -> str:
    rows = rule_counts(list(report.findings))
    width = max((len(str(at.count)) for row in rows for at in row.heats), default=1)
    lines = [
        f"{at.count:>{width}}\t{row.code}\t{row.name}\t{at.heat.label}\t"
        + ", ".join(f"{n} {name}" for name, n in at.severities.items())
        for row in rows
        for at in row.heats
    ]
    return "\n".join([*lines, *summary]) + "\n"


def render_statistics_json(report: Report) -> str:
    rows = [
        {
            "code": row.code, "name": row.name, "count": row.count, "severities": row.severities,
            "heats": {at.heat.label: {"count": at.count, "severities": at.severities} for at in row.heats},
        }
        for row in rule_counts(list(report.findings))
    ]
    return json_safe(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n"
