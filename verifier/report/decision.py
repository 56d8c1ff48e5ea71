"""PASS or BLOCK, with every reason spelled out.

Default policy (RULES.md): BLOCK on any finding whose severity is in `block-on` (CRITICAL,
HIGH) and whose premises are all proven, on a measured dynamic target missed, or on a score
below `min-score`; otherwise PASS.
With a baseline and `block-on-new-only`, only new findings block, and a low score blocks only
when it also fell below the baseline's score (legacy debt does not block a merge by itself).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from verifier.config import DEFAULT_BLOCK_ON, DEFAULT_MIN_SCORE
from verifier.dynamic.results import DynamicResult, Verdict, VerdictStatus
from verifier.findings import Finding, Severity
from verifier.report.figures import target_value

__all__ = ["DEFAULT_BLOCK_ON", "Decision", "Policy", "decide", "severity_counts"]


@dataclass(frozen=True)
class Policy:
    block_on: frozenset[Severity] = DEFAULT_BLOCK_ON
    min_score: int = DEFAULT_MIN_SCORE
    block_on_new_only: bool = False


@dataclass(frozen=True)
class Decision:
    status: str
    reasons: tuple[str, ...]
    blocking: tuple[Finding, ...] = ()
    missed: tuple[Verdict, ...] = field(default=())

    @property
    def blocks(self) -> bool:
        return self.status == "BLOCK"


def severity_counts(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {s.name: counts.get(s, 0) for s in sorted(Severity, reverse=True)}


def decide(
    findings: list[Finding],
    policy: Policy | frozenset[Severity] = Policy(),
    *,
    score: int | None = None,
    dynamic: DynamicResult | None = None,
    new_findings: list[Finding] | None = None,
    baseline_score: int | None = None,
    score_label: str = "score",
) -> Decision:
    """Decide from findings, the score and the verdicts.

    `new_findings` is the subset not in the baseline; it narrows blocking only when the policy
    says `block_on_new_only`.
    """
    if not isinstance(policy, Policy):
        policy = Policy(block_on=frozenset(policy))
    only_new = policy.block_on_new_only and new_findings is not None
    candidates = new_findings if only_new else findings
    # Only a finding whose premises are all proven can block (a severity configured above what
    # its evidence allows still reports it, never blocks on it).
    blocking = tuple(
        sorted((f for f in candidates if f.severity in policy.block_on and f.proven), key=lambda f: (-f.severity, f))
    )
    reasons = [
        f"{f.severity.name} {f.code} {f.name} at {f.place}: {f.message}" for f in blocking
    ]
    # A calibration run measures the reference implementation, not the code under review.
    judged = dynamic.verdicts if dynamic is not None and dynamic.role == "measured" else ()
    missed = tuple(
        v for v in judged
        if v.status is VerdictStatus.MISS and v.measured is not None
    )
    reasons += [
        f"measured target missed: {v.label}: {target_value(v.measured, v.unit)} "
        f"(target {v.comparison} {target_value(v.target, v.unit)})"
        for v in missed
    ]
    if score is not None and score < policy.min_score:
        if not only_new or baseline_score is None:
            reasons.append(f"{score_label} {score}/100 is below the minimum {policy.min_score}")
        elif score < baseline_score:
            reasons.append(
                f"{score_label} {score}/100 is below the minimum {policy.min_score} and below the baseline's "
                f"{baseline_score}"
            )
    status = "BLOCK" if reasons else "PASS"
    return Decision(status, tuple(reasons), blocking, missed)
