"""Terminal output in the form editors and CI logs already parse: `path:line:col: CODE [SEV] message`."""

from __future__ import annotations

from verifier.findings import Finding
from verifier.report.decision import Decision, severity_counts


def finding_line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} [{finding.severity.name}] {finding.message}"


def render_text(findings: list[Finding], files_analysed: int, decision: Decision) -> str:
    lines = [finding_line(f) for f in findings]
    counts = severity_counts(findings)
    listed = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    noun = "file" if files_analysed == 1 else "files"
    if findings:
        lines.append(f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} in {files_analysed} {noun} ({listed}).")
    else:
        lines.append(f"No findings in {files_analysed} {noun}.")
    blocking = f": {len(decision.reasons)} blocking finding{'s' if len(decision.reasons) != 1 else ''}" if decision.blocks else ""
    lines.append(f"Decision: {decision.status}{blocking}")
    return "\n".join(lines) + "\n"
