"""Terminal output in the form editors and CI logs already parse: `path:line:col: CODE [SEV] message`."""

from __future__ import annotations

from verifier.findings import Finding
from verifier.report.decision import severity_counts
from verifier.report.model import Report


def finding_line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} [{finding.severity.name}] {finding.message}"


def render_text(report: Report, *, quiet: bool = False) -> str:
    """Findings; then (unless quiet) score, baseline, counts, and the decision as the last line."""
    findings = list(report.findings)
    lines = [finding_line(f) for f in findings]
    if quiet:
        return "".join(line + "\n" for line in lines)
    scorecard, policy = report.scorecard, report.policy
    scope = ", static categories only" if scorecard.static_only else ""
    relation = "below the minimum" if scorecard.total < policy.min_score else "minimum"
    lines.append(f"Score: {scorecard.total}/100 ({relation} {policy.min_score}{scope}).")
    if report.baseline is not None:
        lines.append(
            f"Baseline {report.baseline.path}: {len(report.baseline.new)} new, "
            f"{len(report.baseline.existing)} existing, {len(report.baseline.fixed)} fixed."
        )
    files = len(report.files)
    noun = "file" if files == 1 else "files"
    if findings:
        listed = ", ".join(f"{n} {name}" for name, n in severity_counts(findings).items() if n)
        plural = "s" if len(findings) != 1 else ""
        lines.append(f"Found {len(findings)} finding{plural} in {files} {noun} ({listed}).")
    else:
        lines.append(f"No findings in {files} {noun}.")
    lines.append(f"Decision: {report.decision.status}{_decision_detail(report)}")
    return "\n".join(lines) + "\n"


def _decision_detail(report: Report) -> str:
    """Blocking findings first; the score is named only when it is the sole cause."""
    decision = report.decision
    if not decision.blocks:
        return ""
    parts = []
    if decision.blocking:
        count = len(decision.blocking)
        parts.append(f"{count} blocking finding{'s' if count != 1 else ''}")
    if decision.missed:
        count = len(decision.missed)
        parts.append(f"{count} measured target{'s' if count != 1 else ''} missed")
    if not parts:
        parts.append(f"score {report.scorecard.total}/100 below the minimum {report.policy.min_score}")
    return ": " + ", ".join(parts)
