"""Each rule's precision measured on judged real code (`rules/measured_precision.json`).

The table is data (JSON, never code), written by `tests/realcode/rule_precision.py` from a run
of the real-code scorer. A sub-case (a rule at one severity) earns the default rule set when its
strict precision (TP over judged) is at least 0.70 and its lenient precision (TP and DEB over
judged) at least 0.90; `verify-perf rule CODE` and docs/rule-precision.md show where each stands.
A rule's fix is applied by a plain `--fix` only when the rule's strict precision over all its
judged findings is at least 0.95 (`fix_is_stable`); below that, as ruff does with fixes it does
not trust yet, only with `--preview`: a fix applied to a finding that was not worth making, or
wrong, changes code that needed no change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

SEVERITIES = ("CRITICAL", "HIGH", "MEDIUM", "LOW")
STRICT_BAR = 0.70
LENIENT_BAR = 0.90
FIX_BAR = 0.95
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


def pooled(code: str, table: dict | None = None) -> Counts:
    """Every judged finding of `code`, whatever its severity."""
    rows = measured(code, table).values()
    return Counts(sum(c.tp for c in rows), sum(c.deb for c in rows), sum(c.fp for c in rows))


def fix_is_stable(code: str, table: dict | None = None) -> bool:
    """A fix of `code` is applied without `--preview`: its strict precision, all severities
    pooled, reaches FIX_BAR over at least one judged finding."""
    counts = pooled(code, table)
    return counts.judged > 0 and counts.strict >= FIX_BAR


def fix_lines(code: str, autofix: str, safe: bool) -> list[str]:
    """The rule page's "Fix" section: what `--fix` changes, whether it is safe, and when it applies."""
    if not autofix:
        return ["No automatic fix: `--fix` leaves these findings to you."]
    safety = (
        "Safe: it keeps the code's behaviour; `--fix` applies it." if safe
        else "Unsafe: it may change behaviour; `--fix` applies it only with `--unsafe-fixes`."
    )
    counts = pooled(code)
    measured_text = f"{counts.strict:.2f} over {counts.judged} judged" if counts.judged else "not measured"
    if fix_is_stable(code):
        availability = f"Available: strict precision {measured_text} meets the {FIX_BAR:.2f} bar for fixes."
    else:
        availability = (
            f"In preview: applied only with `--preview`, since strict precision ({measured_text}) is below "
            f"the {FIX_BAR:.2f} bar for fixes."
        )
    return [f"`--fix`: {autofix}.", "", safety, availability]


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
