"""GitHub Actions workflow commands: one `::error file=...,line=...::message` line per finding.

Escaping follows the runner's rules: in the message `%`, CR and LF are percent-encoded; in
property values `:` and `,` are too, since they delimit properties.
"""

from __future__ import annotations

from verifier.findings import Finding, Severity
from verifier.report.file_names import line_safe
from verifier.report.model import Report
from verifier.report.text import because, heat_note

LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "warning",
    Severity.INFO: "notice",
}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    properties = {
        "file": finding.path.replace("\\", "/"),
        "line": str(finding.shown_line),
        "endLine": str(finding.shown_end_line),
        "col": str(finding.column),
        "title": f"{finding.code} {finding.name} [{finding.severity.name}]"
                 + (f" (cell {finding.cell})" if finding.cell is not None else ""),
    }
    listed = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    # The annotation shows why the line is hot and what the finding rests on, under the message.
    note = heat_note(finding)
    details = [*([f"note: {note}"] if note else []), *(f"because: {reason}" for reason in because(finding))]
    message = "\n".join([finding.message, *details])
    # Percent-encoding leaves other control characters (a terminal escape in a file name) as they are.
    return line_safe(f"::{LEVEL[finding.severity]} {listed}::{escape_data(message)}")


def render_github(report: Report) -> str:
    lines = [annotation(f) for f in report.findings]
    if report.suppressed:
        count = len(report.suppressed)
        lines.append(f"::notice title=verify-perf::{count} finding{'' if count == 1 else 's'} suppressed by comments")
    return "".join(line + "\n" for line in lines)
