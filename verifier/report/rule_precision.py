"""Each rule's precision measured on judged real code (`rules/measured_precision.json`).

The table is data (JSON, never code), written by `tests/realcode/rule_precision.py` from a run
of the real-code scorer. A sub-case (a rule at one severity) earns the default rule set when its
strict precision (TP over judged) is at least 0.70 and its lenient precision (TP and DEB over
judged) at least 0.90; `verify-perf rule CODE` and docs/rule-precision.md show where each stands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
STRICT_BAR = 0.70
LENIENT_BAR = 0.90
TABLE_NAME = "measured_precision.json"


@dataclass(frozen=True)
class Counts:
    tp: int
    deb: int
    fp: int

    @classmethod
    def of(cls, row: dict) -> Counts:
        return cls(int(row.get("TP", 0)), int(row.get("DEB", 0)), int(row.get("FP", 0)))

    @property
    def judged(self) -> int:
        return self.tp + self.deb + self.fp

    @property
    def strict(self) -> float:
        return self.tp / self.judged if self.judged else 0.0

    @property
    def lenient(self) -> float:
        return (self.tp + self.deb) / self.judged if self.judged else 0.0

    @property
    def meets_bar(self) -> bool:
        return self.judged > 0 and self.strict >= STRICT_BAR and self.lenient >= LENIENT_BAR

    def describe(self) -> str:
        verdict = "meets the default bar" if self.meets_bar else "below the default bar"
        return (
            f"strict {self.strict:.2f}, lenient {self.lenient:.2f} over {self.judged} judged "
            f"(TP {self.tp}, DEB {self.deb}, FP {self.fp}): {verdict}"
        )


@cache
def measured_table() -> dict:
    """The shipped table; an empty one if the file is missing or unreadable (docs say so)."""
    try:
        text = resources.files("verifier.rules").joinpath(TABLE_NAME).read_text(encoding="utf-8")
        table = json.loads(text)
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) and table.get("schema") == 1 else {}


def measured(code: str, table: dict | None = None) -> dict[str, Counts]:
    """Per severity, what the judges said of `code`'s findings; empty when none was judged."""
    rows = (table if table is not None else measured_table()).get("rules", {}).get(code, {})
    return {severity: Counts.of(rows[severity]) for severity in SEVERITIES if severity in rows}


def measured_lines(code: str) -> list[str]:
    """The rule page's "Measured on real code" section, as markdown lines."""
    table = measured_table()
    by_severity = measured(code, table)
    if not table:
        return ["No measurement ships with this build."]
    where = f"{table['repositories']} public repositories judged by reading the code, build {table['build']}"
    if not by_severity:
        return [f"No finding of this rule was judged ({where})."]
    return [f"On {where}:", *(f"- {severity}: {counts.describe()}" for severity, counts in by_severity.items())]


def measured_record(code: str) -> dict:
    """The same for `verify-perf rule CODE --format json`."""
    return {
        severity: {"tp": c.tp, "deb": c.deb, "fp": c.fp, "strict": round(c.strict, 3),
                   "lenient": round(c.lenient, 3), "meets_bar": c.meets_bar}
        for severity, c in measured(code).items()
    }


def measured_precision_page(table: dict) -> str:
    """docs/rule-precision.md: every judged sub-case in one table."""
    lines = [
        "# Measured precision of each rule on real code",
        "",
        "Every finding above INFO that verify-perf reported on the judged public repositories",
        f"({table['repositories']} repositories, sets {', '.join(table['sets'])}, build {table['build']}) was judged",
        "by reading the code: TP (right and worth fixing), DEB (true, but not worth a report), FP",
        "(wrong). Strict precision is TP over judged, lenient (TP + DEB) over judged. A rule at one",
        f"severity meets the bar for the default rule set at strict >= {STRICT_BAR:.2f} and lenient >= {LENIENT_BAR:.2f}.",
        "The verdicts and the scorer are in `tests/realcode/`; `verify-perf rule CODE` shows the same rows.",
        "",
        "| rule | severity | judged | TP / DEB / FP | strict | lenient | bar |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for code in sorted(table["rules"]):
        for severity, c in measured(code, table).items():
            lines.append(
                f"| {code} | {severity} | {c.judged} | {c.tp} / {c.deb} / {c.fp} | {c.strict:.2f} | "
                f"{c.lenient:.2f} | {'met' if c.meets_bar else 'below'} |"
            )
    return "\n".join(lines) + "\n"
