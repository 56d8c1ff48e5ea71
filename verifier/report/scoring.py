"""The score out of 100: one documented formula (docs/scoring.md).

Each scored category is worth the same share of 100; a category that no enabled rule covers
is not scored. Inside a category every finding costs a fraction of that share by severity
(CRITICAL 1, HIGH 1/2, MEDIUM 1/5, LOW 1/20, INFO 0); the k-th repeat of one rule in a
category costs that times 1/2**k, so repeats cost less each time and one rule can never cost
more than twice its first finding. A category loses at most its share. Measured performance
is scored from the harness's verdicts (the share of evaluated targets met) plus one term for the
user's measured host syncs per step (1 / (1 + syncs)), only for a measured --entry, and is left
out, with the reason, when nothing was measured. The total is rounded down, so any cost at all
shows below 100. Fractions keep the arithmetic exact.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction

from verifier.dynamic.results import DynamicResult, VerdictStatus
from verifier.findings import Category, Finding, Severity

MEMORY = "Memory"
SYNC = "Host-device sync"
DATA = "Data loading"
AMP = "Mixed precision"
MEASURED = "Measured performance"
SCORE_CATEGORIES = (MEMORY, SYNC, DATA, AMP, MEASURED)

SEVERITY_COST = {
    Severity.CRITICAL: Fraction(1),
    Severity.HIGH: Fraction(1, 2),
    Severity.MEDIUM: Fraction(1, 5),
    Severity.LOW: Fraction(1, 20),
    Severity.INFO: Fraction(0),
}
REPEAT_DECAY = Fraction(1, 2)

CALIBRATION_NOTE = (
    "not scored: the dynamic run measured the bundled reference implementation, a calibration of the "
    "machine and toolchain, not the analysed code (pass --entry to measure and score your own step)"
)

# Report sections map onto the five scored categories; Analysis (VP900) is never scored.
SCORE_CATEGORY_OF = {
    Category.MEMORY: MEMORY,
    Category.SYNC: SYNC,
    Category.GPU: SYNC,
    Category.CONCURRENCY: SYNC,
    # Collectives and barriers make the host (or every rank) wait like a sync does.
    Category.DISTRIBUTED: SYNC,
    Category.DATA: DATA,
    Category.ALGORITHMIC: DATA,
    Category.AMP: AMP,
}


@dataclass(frozen=True)
class Deduction:
    """What one rule cost inside one category."""

    code: str
    name: str
    severity: Severity
    count: int
    points: Fraction


@dataclass(frozen=True)
class CategoryScore:
    name: str
    scored: bool
    max_points: Fraction
    points: Fraction
    deductions: tuple[Deduction, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Scorecard:
    # None when nothing was analysed: a run that looked at no code earns no score at all.
    total: int | None
    categories: tuple[CategoryScore, ...]
    not_scored: str = ""
    # The same formula over the findings whose premises are all proven: what the decision reads
    # (only proven findings may block, a low score included). None when nothing was scored.
    proven_total: int | None = None

    @property
    def deciding_total(self) -> int | None:
        return self.proven_total if self.proven_total is not None else self.total

    @property
    def static_only(self) -> bool:
        return not self.category(MEASURED).scored

    def category(self, name: str) -> CategoryScore:
        return next(c for c in self.categories if c.name == name)


def score(
    findings: list[Finding],
    dynamic: DynamicResult | None = None,
    dynamic_note: str = "",
    checked: frozenset[str] | None = None,
) -> Scorecard:
    """Score the findings; `checked` names the static categories some enabled rule covers
    (None: all of them). A category nothing checked is not scored rather than scored full."""
    static = [name for name in SCORE_CATEGORIES[:-1] if checked is None or name in checked]
    measured_fraction, measured_note = _measured_fraction(dynamic, dynamic_note)
    scored_count = len(static) + (measured_fraction is not None)
    share = Fraction(100, scored_count) if scored_count else Fraction(0)
    categories = []
    for name in SCORE_CATEGORIES[:-1]:
        if name in static:
            mine = [f for f in findings if SCORE_CATEGORY_OF.get(f.category) == name]
            categories.append(_static_category(name, mine, share))
        else:
            categories.append(CategoryScore(name, False, Fraction(0), Fraction(0), note="no enabled rule covers it"))
    if measured_fraction is None:
        categories.append(CategoryScore(MEASURED, False, Fraction(0), Fraction(0), note=measured_note))
    else:
        categories.append(CategoryScore(MEASURED, True, share, share * measured_fraction, note=measured_note))
    # With nothing scored there is nothing to deduct from: the score is vacuously full.
    total = math.floor(sum((c.points for c in categories), Fraction(0))) if scored_count else 100
    return Scorecard(total, tuple(categories))


def checked_categories(rules) -> frozenset[str]:
    """The scored categories that at least one of `rules` reports into."""
    return frozenset(SCORE_CATEGORY_OF[r.category] for r in rules if r.category in SCORE_CATEGORY_OF)


def _static_category(name: str, findings: list[Finding], share: Fraction) -> CategoryScore:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_rule[finding.code].append(finding)
    deductions = []
    for code in sorted(by_rule):
        # The most severe occurrence pays full price; later repeats pay less each time.
        repeats = sorted(by_rule[code], key=lambda f: (-f.severity, f))
        cost = sum(
            (SEVERITY_COST[f.severity] * REPEAT_DECAY**k for k, f in enumerate(repeats)), Fraction(0)
        )
        if cost:
            deductions.append(Deduction(code, repeats[0].name, repeats[0].severity, len(repeats), cost * share))
    lost = min(share, sum((d.points for d in deductions), Fraction(0)))
    return CategoryScore(name, True, share, share - lost, tuple(deductions))


def _measured_fraction(dynamic: DynamicResult | None, dynamic_note: str) -> tuple[Fraction | None, str]:
    if dynamic is None:
        return None, f"dynamic harness {dynamic_note or 'not run'}"
    if dynamic.role == "calibration":
        return None, CALIBRATION_NOTE
    if dynamic.failure:
        return None, f"the harness could not measure ({dynamic.failure})"
    judged = [
        v for v in dynamic.verdicts
        if v.status in (VerdictStatus.PASS, VerdictStatus.MISS) and v.measured is not None
    ]
    syncs = [m.user_syncs_per_step for m in dynamic.modes if m.ok and m.user_syncs_per_step is not None]
    if not judged and not syncs:
        return None, "no target could be evaluated on this device"
    met = sum(1 for v in judged if v.status is VerdictStatus.PASS)
    note = f"{met} of {len(judged)} measured targets met"
    if not syncs:
        return Fraction(met, len(judged)), note
    # One more term: full credit for no user sync per step, 1/(1 + n) for n of them (worst mode).
    worst = Fraction(max(syncs)).limit_denominator(1000)
    credit = 1 / (1 + worst)
    note += f"; user host syncs per step {float(worst):g} (credit {credit})"
    return (met + credit) / (len(judged) + 1), note
