"""Which offered fixes a run may apply.

A fix is offered when the rule's measured strict precision reaches the bar for fixes
(`verifier.report.rule_precision.fix_is_stable`), or with preview on; never in a notebook, whose
cells are JSON and are not edited here. Every output then agrees: a finding marked `[*]` is one
that `--fix` (with `--unsafe-fixes` for an unsafe fix) would change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from verifier.findings import Finding
from verifier.report.rule_precision import fix_is_stable


def offered(findings: Iterable[Finding], *, preview: bool) -> list[Finding]:
    """The findings, each keeping its fix only where this run may apply it."""
    return [finding if _may_apply(finding, preview) else replace(finding, autofix=None) for finding in findings]


def _may_apply(finding: Finding, preview: bool) -> bool:
    if finding.autofix is None:
        return True
    return finding.cell is None and (preview or fix_is_stable(finding.code))
