"""Text output for a person at a terminal: the same lines as `text`, in colour, each finding
followed by a code frame of its source with the reported columns underlined (as ruff shows
them). Used when standard output is a terminal or FORCE_COLOR asks for it; piped output otherwise
stays plain `text`. NO_COLOR and FORCE_COLOR are read in `verifier.report.styling`, not left to
rich, whose NO_COLOR keeps bold and dim.
"""

from __future__ import annotations

import io
import os

from rich.console import Console
from rich.text import Text

from verifier.findings import Finding, Severity
from verifier.report.file_names import frame_safe, line_safe
from verifier.report.model import Report
from verifier.report.text import baseline_mark, finding_block, fix_listing, summary_lines

STYLE = {
    Severity.CRITICAL: "bold red",
    Severity.HIGH: "red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "blue",
}


def render_terminal(report: Report, *, quiet: bool = False, width: int | None = None, colour: bool = True) -> str:
    """The text for the terminal on standard output: with `colour`, ANSI styles included; without,
    the same layout with none at all."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=colour, color_system="auto" if colour else None, width=width or _width(),
        highlight=False, soft_wrap=True,
    )
    for finding in report.findings:
        console.print(_headline(finding, report))
        if quiet:
            continue
        for note in finding_block(finding, report)[1:]:
            console.print(Text(line_safe(note), style="dim"))
        for line in code_frame(finding):
            console.print(line)
    if not quiet:
        if report.findings:
            console.print()
        for line in [*fix_listing(report), *summary_lines(report)]:
            console.print(_summary_style(line_safe(line)))
    return buffer.getvalue()


def _headline(finding: Finding, report: Report) -> Text:
    line = Text()
    line.append(f"{line_safe(finding.location)}:", style="bold")
    line.append(" ")
    line.append(finding.code, style=STYLE[finding.severity])
    line.append(" ")
    line.append(f"[{finding.severity.name}]", style=STYLE[finding.severity])
    if report.fixes.applies_to(finding):
        line.append(" ")
        line.append("[*]", style="bold")
    mark = baseline_mark(finding, report)
    if mark:
        line.append(" ")
        line.append(mark, style="bold magenta")
    line.append(f" {line_safe(finding.message)}")
    return line


def code_frame(finding: Finding) -> list[Text]:
    """The finding's source lines behind a line-number gutter, the reported span underlined."""
    if not finding.source:
        return []
    lines = finding.source.split("\n")
    first = finding.shown_line
    last = first + len(lines) - 1
    width = len(str(last))
    frame = [Text(f"{' ' * width} |", style="dim")]
    for offset, text in enumerate(lines):
        row = Text(f"{first + offset:>{width}} | ", style="dim")
        row.append(frame_safe(text))
        frame.append(row)
        underline = _underline(finding, finding.line + offset, text)
        if underline:
            frame.append(Text(f"{' ' * width} | ", style="dim") + Text(underline, style=STYLE[finding.severity]))
    frame.append(Text(f"{' ' * width} |", style="dim"))
    return frame


def _underline(finding: Finding, number: int, text: str) -> str:
    """`^^^` under the reported columns of this line (columns are 1-based; end is exclusive)."""
    end_line = max(finding.line, finding.end_line)
    if not finding.line <= number <= end_line:
        return ""
    start = finding.column - 1 if number == finding.line else len(text) - len(text.lstrip())
    stop = finding.end_column - 1 if number == end_line and finding.end_column else len(text.rstrip())
    stop = max(stop, start + 1)
    # Tabs stay tabs, so the carets line up however the terminal expands them.
    return "".join(c if c == "\t" else " " for c in text[:start]) + "^" * (stop - start)


def _summary_style(line: str) -> Text:
    if line.startswith("Decision: BLOCK"):
        return Text(line, style="bold red")
    if line.startswith("Decision: PASS"):
        return Text(line, style="bold green")
    return Text(line)


def _width() -> int:
    """The terminal's columns; a pseudo-terminal that reports none (0, as under `script` or
    `docker run -t` without a size) gets 100, since rich prints nothing at all at width 0."""
    try:
        columns = os.get_terminal_size().columns
    except OSError:
        columns = 0
    return columns if columns > 0 else 100
