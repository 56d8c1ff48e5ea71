"""Terminal output in the form editors and CI logs already parse: `path:line:col: CODE [SEV] message`."""

from __future__ import annotations

from collections.abc import Callable

from verifier.findings import Finding, Heat, Premise
from verifier.report.decision import severity_counts
from verifier.report.file_names import line_safe
from verifier.report.model import Report


def finding_line(finding: Finding, mark: str = "", fixable: bool = False) -> str:
    """`path:line:col: CODE [SEVERITY] message`; `[*]` after the severity when `--fix` would fix it
    (ruff's mark), and `mark` (e.g. `(new)`) before the message."""
    prefix = f"{finding.location}: {finding.code} [{finding.severity.name}] " + ("[*] " if fixable else "")
    return prefix + (f"{mark} " if mark else "") + finding.message


def reported_line(finding: Finding, report: Report) -> str:
    """The finding's line as this run shows it: fix and baseline marks included."""
    return finding_line(finding, baseline_mark(finding, report), report.fixes.applies_to(finding))


def baseline_mark(finding: Finding, report: Report) -> str:
    """With --baseline, a finding the baseline did not have is marked `(new)`."""
    if report.baseline is not None and report.baseline.states.get(finding) == "new":
        return "(new)"
    return ""


def finding_block(finding: Finding, report: Report) -> list[str]:
    """The finding's line, then any note lines about it (indented, so editors skip them)."""
    lines = [reported_line(finding, report)]
    note = heat_note(finding)
    if note:
        lines.append(f"    = note: {note}")
    lines.extend(f"    = because: {reason}" for reason in because(finding))
    if finding.runtime:
        lines.append(f"    {finding.runtime}")
    return lines


def because(finding: Finding, place: Callable[[str], str] = str) -> list[str]:
    """The premises a reader needs beyond the message and the heat note: what shows the value and
    the rule's own premise, and every premise that is only assumed or unknown, with its status.
    A proven cost or frequency premise says nothing the line and the note do not."""
    reasons = []
    for item in finding.evidence:
        if item.proven and item.premise in (Premise.COST, Premise.FREQUENCY):
            continue
        where = f" ({place(f'{item.path}:{item.line}')})" if item.path and item.line else ""
        reasons.append(f"{item.premise.value} {item.status.value}: {item.text}{where}")
    return reasons


def heat_note(finding: Finding, place: Callable[[str], str] = str,
              *, numbered: Callable[[str, int], str] | None = None) -> str:
    """Why the line is hot, from its heat trace: `runs every step: train.py:43 calls
    log_metrics() inside the step loop at train.py:30 (iterates train_loader, calls
    optimizer.step())`; "" without a trace. `place` formats each `path:line`; `numbered`, if
    given, instead formats it knowing its step's number in the trace (from 1)."""
    if not finding.heat_trace:
        return ""
    parts = []
    for number, step in enumerate(finding.heat_trace, start=1):
        spelled = f"{step.path}:{step.line}" if step.line else step.path
        where = numbered(spelled, number) if numbered is not None else place(spelled)
        if step.is_loop:
            kind, _, why = step.what.partition(": ")
            parts.append(f"inside the {kind} at {where} ({why})")
        else:
            parts.append(f"{where} {step.what}")
    calls, last = parts[:-1], parts[-1]
    if finding.heat_trace[-1].is_loop and calls:
        chain = "; ".join(calls) + " " + last
    else:
        chain = "; ".join(parts)
    runs = "runs" if finding.heat is Heat.ONCE else f"runs {finding.heat.often}"
    if finding.heat is Heat.EPOCH and any("rate-limit guard" in step.what for step in finding.heat_trace):
        runs = "runs every few steps"
    return f"{runs}: {chain}"


def render_text(report: Report, *, quiet: bool = False) -> str:
    """Findings; then (unless quiet) score, baseline, counts, and the decision as the last line.
    Quiet: one line per finding, nothing else."""
    if quiet:
        return "".join(line_safe(reported_line(f, report)) + "\n" for f in report.findings)
    lines = [line for f in report.findings for line in finding_block(f, report)]
    # One line stays one line, whatever a file name holds.
    return "\n".join(line_safe(line) for line in [*lines, *fix_listing(report), *summary_lines(report)]) + "\n"


def render_concise(report: Report, *, quiet: bool = False) -> str:
    """ruff's `concise`: one `path:line:col: CODE [SEVERITY] message` line per finding, no notes;
    then (unless quiet) the summary, the decision last."""
    lines = [reported_line(f, report) for f in report.findings]
    if not quiet:
        lines += [*fix_listing(report), *summary_lines(report)]
    return "".join(line_safe(line) + "\n" for line in lines)


def not_compared(comparison) -> str:
    """The stored findings this run could not judge, when there are any."""
    count = len(comparison.not_compared)
    if not count:
        return ""
    return f"; {count} not compared (their rule did not run on their file, or the file was not analysed)"


def score_not_compared(comparison) -> str:
    return "" if comparison.score_compared else "; its score is not compared (it was made with other rules)"


def summary_lines(report: Report) -> list[str]:
    """Score, baseline, counts and the decision (always the last line)."""
    findings = list(report.findings)
    lines = []
    scorecard, policy = report.scorecard, report.policy
    scope = ", static categories only" if scorecard.static_only else ""
    if scorecard.total is None:
        lines.append(f"Score: not scored ({scorecard.not_scored}).")
    else:
        deciding = scorecard.deciding_total
        relation = "below the minimum" if deciding < policy.min_score else "minimum"
        proven = f"; {deciding}/100 over the proven findings, which the minimum is checked against" if (
            deciding != scorecard.total
        ) else ""
        lines.append(f"Score: {scorecard.total}/100 ({relation} {policy.min_score}{scope}{proven}).")
    if report.baseline is not None:
        lines.append(
            f"Baseline {report.baseline.path}: {len(report.baseline.new)} new, "
            f"{len(report.baseline.existing)} existing, {len(report.baseline.fixed)} fixed{not_compared(report.baseline)}"
            f"{score_not_compared(report.baseline)}."
        )
    files = counted(len(report.files), "file")
    heat = f"; heat from {counted(report.heat_files, 'project file')}" if report.heat_files > len(report.files) else ""
    if report.suppressed:
        heat += f"; {len(report.suppressed)} suppressed by comments"
    lines += fixed_line(report)
    if findings:
        listed = ", ".join(f"{n} {name}" for name, n in severity_counts(findings).items() if n)
        with_findings = len({f.path for f in findings})
        unanalysable = report.unanalysable_files
        if unanalysable:
            # Never "in 2 of 2 analysed files" beside "none of the 2 files could be analysed".
            analysed = len(report.files) - unanalysable
            where = (
                f"{counted(len(report.files), 'file')}, {analysed} of them analysed "
                f"({counted(unanalysable, 'file')} could not be)"
            )
        else:
            where = counted(len(report.files), "analysed file")
        lines.append(f"Found {counted(len(findings), 'finding')} ({listed}) in {with_findings} of {where}{heat}.")
    elif not report.files:
        lines.append("Nothing analysed: no Python files found under the given path(s).")
    else:
        lines.append(f"No findings in {files}{heat}.")
    lines += fixable_lines(report)
    lines.append(f"Decision: {report.decision.status}{_decision_detail(report)}")
    return lines


def fixed_line(report: Report) -> list[str]:
    """`Fixed 2 findings in 1 file.` after `--fix` fixed any."""
    fixed = report.fixes.fixed
    if not fixed:
        return []
    return [f"Fixed {counted(len(fixed), 'finding')} in {counted(len({f.path for f in fixed}), 'file')}."]


def fixable_lines(report: Report) -> list[str]:
    """What `--fix` would still fix, in ruff's words: `[*] 2 fixable with the `--fix` option`, and
    the unsafe fixes left out unless `--unsafe-fixes` is given."""
    offered = [f for f in report.findings if f.autofix is not None]
    fixable = sum(report.fixes.applies_to(f) for f in offered)
    hidden = len(offered) - fixable
    hint = (
        f" ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option)"
        if hidden else ""
    )
    lines = []
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option{hint}.")
    elif hidden:
        lines.append(f"No fixes available{hint}.")
    return lines


def fix_listing(report: Report) -> list[str]:
    """`--show-fixes`: the findings `--fix` fixed (or, without it, would fix), per file and rule."""
    fixes = report.fixes
    if not fixes.show:
        return []
    listed = list(fixes.fixed) if fixes.applied else [f for f in report.findings if fixes.applies_to(f)]
    if not listed:
        return []
    lines = [f"{'Fixed' if fixes.applied else 'Would fix'} {counted(len(listed), 'finding')}:"]
    for path in sorted({f.path for f in listed}):
        lines.append(f"- {path}:")
        here = [f for f in listed if f.path == path]
        for code in sorted({f.code for f in here}):
            same = [f for f in here if f.code == code]
            lines.append(f"    {len(same)} × {code} ({same[0].name})")
    return lines


def counted(count: int, noun: str) -> str:
    """`1 finding`, `3 findings`: every count a reader sees goes through here."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _decision_detail(report: Report) -> str:
    """Blocking findings first; the score is named only when it is the sole cause."""
    decision = report.decision
    if not decision.blocks:
        return ""
    parts = []
    if decision.blocking:
        parts.append(counted(len(decision.blocking), "blocking finding"))
    if decision.missed:
        parts.append(f"{counted(len(decision.missed), 'measured target')} missed")
    if not parts:
        parts.append(f"score {report.scorecard.total}/100 below the minimum {report.policy.min_score}")
    return ": " + ", ".join(parts)
