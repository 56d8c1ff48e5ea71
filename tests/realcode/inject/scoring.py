"""Decide, from verify-perf's findings, which injected probes it found.

A probe is found when its costly line carries a finding of one of the probe's rules at heat
"step" (any severity). A miss says what the line got instead, so misses can be grouped by
cause: nothing at all, the right rule at another heat, another rule, or the right finding on
the loop's call line instead of the helper's line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tests.realcode.inject.path_kinds import Injection
from tests.realcode.inject.probes import PROBES_BY_NAME

SEVERITY_ORDER = ("INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL")


@dataclass(frozen=True)
class Outcome:
    repo: str
    target: str
    kind: str
    probe: str
    found: bool
    severity: str | None
    reason: str
    path: str
    line: int

    def as_dict(self) -> dict:
        return asdict(self)


def _at(findings: list[dict], path: str, line: int) -> list[dict]:
    return [f for f in findings if f["path"] == path and f["line"] == line]


def _describe(findings: list[dict]) -> str:
    return ", ".join(f"{f['code']} {f['severity']} {f.get('heat')}" for f in findings)


def score_injection(findings: list[dict], injection: Injection, repo: str, target: str) -> list[Outcome]:
    """One outcome per probe of the injection; `findings` have repository-relative paths."""
    outcomes = []
    for site in injection.sites:
        rules = PROBES_BY_NAME[site.probe].rules
        here = _at(findings, site.path, site.line)
        right = [f for f in here if f["code"] in rules]
        hot = [f for f in right if f.get("heat") == "step"]
        if hot:
            severity = max((f["severity"] for f in hot), key=SEVERITY_ORDER.index)
            outcomes.append(Outcome(repo, target, injection.kind, site.probe, True, severity,
                                    _describe(hot), site.path, site.line))
            continue
        if right:
            reason = f"right rule, wrong heat: {_describe(right)}"
        elif here:
            reason = f"other rule only: {_describe(here)}"
        else:
            at_call = [f for f in _at(findings, site.call_path, site.call_line) if f["code"] in rules]
            if site.call_line != site.line and at_call:
                reason = f"reported on the call line {site.call_line} instead: {_describe(at_call)}"
            else:
                reason = "no finding"
        outcomes.append(Outcome(repo, target, injection.kind, site.probe, False, None, reason, site.path, site.line))
    return outcomes
