"""PASS or BLOCK, with the reasons, from the findings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from verifier.findings import Finding, Severity

DEFAULT_BLOCK_ON = frozenset({Severity.CRITICAL, Severity.HIGH})


@dataclass(frozen=True)
class Decision:
    status: str
    reasons: tuple[str, ...]

    @property
    def blocks(self) -> bool:
        return self.status == "BLOCK"


def severity_counts(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.severity for f in findings)
    return {s.name: counts.get(s, 0) for s in sorted(Severity, reverse=True)}


def decide(findings: list[Finding], block_on: frozenset[Severity] = DEFAULT_BLOCK_ON) -> Decision:
    blocking = [f for f in findings if f.severity in block_on]
    if not blocking:
        return Decision("PASS", ())
    reasons = tuple(
        f"{f.severity.name} {f.code} {f.name} at {f.path}:{f.line}: {f.message}" for f in blocking
    )
    return Decision("BLOCK", reasons)
