"""The stage-4 markdown report: a view of the `Report` rendered by the Jinja templates.

The view does the thinking (grouping, ordering, wording that depends on data); the templates
only lay it out. Every sentence is backed by a finding, a rule's documentation or a measured
figure: impact is qualitative unless the harness measured syncs at that very line.
"""

from __future__ import annotations

import os
import textwrap
from collections import defaultdict
from dataclasses import dataclass
from functools import cache

import jinja2

from verifier.findings import Category, Finding, Severity
from verifier.report import dynamic_view, figures
from verifier.report.file_names import markdown_safe
from verifier.report.markdown_text import code_span, fenced_block, table_cell, table_divider, table_row
from verifier.report.model import Report
from verifier.report.scoring import MEASURED
from verifier.report.text import counted, heat_note

SEVERITY_ORDER = sorted(Severity, reverse=True)


@dataclass(frozen=True)
class FindingView:
    finding: Finding
    anchor: str
    location: str
    snippet: str
    impact: str
    # Why the line is that hot: the call sites and the loop of its heat trace ("" at once).
    why_hot: str
    # Each premise with its status: `**proven** value: ...` (see `Finding.evidence`).
    evidence: tuple[str, ...]
    measured: tuple[str, ...]
    fix: str
    corrected: str
    state: str


@dataclass(frozen=True)
class CategoryView:
    title: str
    status: str
    note: str
    findings: tuple[FindingView, ...]


@dataclass(frozen=True)
class Recommendation:
    code: str
    name: str
    severity: Severity
    places: str
    fix: str


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("verifier.report", "templates"),
        # Markdown, not HTML: escaping is explicit through the filters below.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=False),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(
        cell=table_cell, code=code_span, fence=fenced_block, row=table_row, divider=table_divider
    )
    return environment


def render_markdown(report: Report) -> str:
    text = _environment().get_template("report.md.j2").render(view=build_view(report))
    return markdown_safe(text.rstrip("\n")) + "\n"


def build_view(report: Report) -> dict:
    """Each finding is written out once, in section 2 under its anchor; the other sections link to it."""
    rules = _rules()
    findings = list(report.findings)
    anchors = {finding: f"finding-{number}" for number, finding in enumerate(findings, start=1)}

    def link(finding: Finding) -> str:
        return f"[{code_span(finding.place)}](#{anchors[finding]})"

    blocking = list(report.decision.blocking)
    return {
        "report": report,
        "counts": {s.name: sum(1 for f in findings if f.severity is s) for s in SEVERITY_ORDER},
        "files_with_findings": len({f.path for f in findings}),
        "categories": _categories(report, rules, anchors),
        "by_severity": [
            f"- **{s.name}**: " + ", ".join(f"{link(f)} {f.code}" for f in findings if f.severity is s)
            for s in SEVERITY_ORDER if any(f.severity is s for f in findings)
        ],
        "dynamic": _dynamic(report),
        "score_rows": _score_rows(report),
        "metrics": _metrics(report),
        "blocking_fixes": _recommendations(blocking, link),
        "optional_fixes": _recommendations(
            [f for f in findings if f not in report.decision.blocking and f.severity > Severity.INFO], link
        ),
        "notes": _recommendations([f for f in findings if f.severity is Severity.INFO], link),
        "reasons": [
            *(f"{f.severity.name} {f.code} {f.name} at {link(f)}" for f in blocking),
            *report.decision.reasons[len(blocking):],
        ],
        "suppressed": _suppressed_lines(report),
        "policy": _policy_sentence(report),
        "summary": _summary_sentence(report),
        "subject": dynamic_view.subject_line(report.dynamic, report.dynamic_note),
    }


def _suppressed_lines(report: Report) -> list[str]:
    """Silenced findings, listed by place so that a reviewer can audit them (never scored)."""
    return [f"{code_span(f.place)} {f.code} {f.name} ({f.severity.name})" for f in report.suppressed]



def _rules() -> dict:
    from verifier.rules import all_rules

    return {rule.code: rule for rule in all_rules()}


def _category_status(findings: list[Finding], report: Report) -> str:
    if any(f.severity in report.policy.block_on for f in findings):
        return "FAIL"
    if any(f.severity > Severity.INFO for f in findings):
        return "WARNING"
    return "PASS"


def _categories(report: Report, rules: dict, anchors: dict[Finding, str]) -> list[CategoryView]:
    grouped: dict[Category, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        grouped[finding.category].append(finding)
    views = []
    shown_patterns: set[str] = set()
    for category in Category:
        findings = sorted(grouped.get(category, []), key=lambda f: (-f.severity, f))
        if category is Category.ANALYSIS and not findings:
            continue
        checked = sorted(code for code in report.rules if code in rules and rules[code].category is category)
        if findings:
            status, note = _category_status(findings, report), ""
        elif checked:
            status, note = "PASS", f"No findings from {', '.join(checked)}."
        else:
            status, note = "NOT CHECKED", "No enabled rule covers this category yet; nothing is claimed about it."
        items = []
        for finding in findings:
            items.append(_finding_view(
                finding, report, rules, anchors[finding], first_of_rule=finding.code not in shown_patterns
            ))
            shown_patterns.add(finding.code)
        views.append(CategoryView(category.value, status, note, tuple(items)))
    return views


def _finding_view(finding: Finding, report: Report, rules: dict, anchor: str, *, first_of_rule: bool) -> FindingView:
    rule = rules.get(finding.code)
    impact = f"{rule.why} " if rule is not None else ""
    impact += f"This code runs {finding.heat.often} (heat: {finding.heat.label})."
    has_pattern = rule is not None and bool(rule.use_instead) and finding.category is not Category.ANALYSIS
    corrected = rule.use_instead if has_pattern and first_of_rule else ""
    fix = finding.fix
    if has_pattern and not first_of_rule:
        fix += f" (corrected pattern: see the first {finding.code} finding above)"
    state = report.baseline.states.get(finding, "") if report.baseline is not None else ""
    return FindingView(
        finding=finding,
        anchor=anchor,
        location=finding.place,
        snippet=textwrap.dedent(finding.source),
        impact=impact,
        why_hot=heat_note(finding, code_span),
        evidence=tuple(
            f"**{item.status.value}** {item.premise.value}: {item.text}"
            + (f" ({code_span(f'{item.path}:{item.line}')})" if item.path and item.line else "")
            for item in finding.evidence
        ),
        measured=tuple(_measured_at(finding, report)),
        fix=fix,
        corrected=corrected,
        state=state,
    )


def _measured_at(finding: Finding, report: Report) -> list[str]:
    """Syncs the harness counted at this very line: the only figures a finding may quote."""
    dynamic = report.dynamic
    if dynamic is None or not dynamic.method.sync_steps:
        return []
    here = (os.path.realpath(finding.path), finding.line)
    lines = []
    for mode in dynamic_view.modes_in_order(dynamic):
        for site in mode.sync_sites:
            path, _, line = site.location.rpartition(":")
            if line.isdigit() and (os.path.realpath(path), int(line)) == here:
                per_step = site.count / dynamic.method.sync_steps
                lines.append(
                    f"{dynamic_view.mode_title(mode)}: {site.count} host syncs ({site.kind}) over "
                    f"{dynamic.method.sync_steps} counted steps, {per_step:.2f} per step"
                )
    return lines


def _dynamic(report: Report) -> dict | None:
    dynamic = report.dynamic
    if dynamic is None:
        return None
    title, about = dynamic_view.section_heading(dynamic)
    return {
        "result": dynamic,
        "title": title,
        "about": about,
        "device": dynamic_view.device_lines(dynamic),
        "workload": dynamic_view.workload_lines(dynamic),
        "modes": dynamic_view.mode_table(dynamic) if dynamic.modes else None,
        "verdicts": dynamic_view.verdict_table(dynamic) if dynamic.verdicts else None,
        "notes": dynamic_view.method_notes(dynamic),
        "sync_sites": dynamic_view.sync_site_lines(dynamic),
        "library_syncs": dynamic_view.library_sync_lines(dynamic),
        "chart": dynamic_view.chart_link(dynamic, report.run.report_path),
    }


def _points(value) -> str:
    return f"{float(value):.1f}"


def _score_rows(report: Report) -> list[tuple[str, str, str]]:
    rows = []
    for category in report.scorecard.categories:
        if not category.scored:
            rows.append((category.name, "not scored", category.note))
            continue
        if category.name == MEASURED:
            detail = category.note
        elif category.deductions:
            detail = "; ".join(
                f"{d.code} ×{d.count} ({_severity_mix(report, d.code)}): −{_points(d.points)}"
                for d in category.deductions
            )
            lost = category.max_points - category.points
            if lost < sum(d.points for d in category.deductions):
                detail += f" (capped at −{_points(category.max_points)})"
        else:
            detail = "no deductions"
        rows.append((category.name, f"{_points(category.points)} / {_points(category.max_points)}", detail))
    return rows


def _severity_mix(report: Report, code: str) -> str:
    """`1 HIGH, 2 LOW`: a rule's findings are not all as severe as its worst one."""
    levels = [f.severity for f in report.findings if f.code == code]
    return ", ".join(f"{levels.count(s)} {s.name}" for s in SEVERITY_ORDER if s in levels)


def _metrics(report: Report) -> list[tuple[str, str, str]]:
    decision, policy = report.decision, report.policy
    blocking_names = ", ".join(s.name for s in SEVERITY_ORDER if s in policy.block_on) or "none"
    blocking = [f for f in report.findings if f.severity in policy.block_on]
    other_levels = [s for s in SEVERITY_ORDER if s not in policy.block_on and s > Severity.INFO]
    others = [f for f in report.findings if f.severity in other_levels]
    total, deciding = report.scorecard.total, report.scorecard.deciding_total
    score_row = (
        ("Score", f"not scored ({report.scorecard.not_scored})", "⚠️ NOT SCORED") if total is None else
        ("Score", f"{total}/100 (minimum {policy.min_score})", "✅ PASS" if total >= policy.min_score else "❌ FAIL")
    )
    proven_rows = [] if total is None or deciding == total else [
        ("Score over proven findings (what the minimum is checked against)", f"{deciding}/100",
         "✅ PASS" if deciding >= policy.min_score else "❌ FAIL"),
    ]
    rows = [
        score_row,
        *proven_rows,
        (f"Blocking findings ({blocking_names})", str(len(blocking)),
         "❌ FAIL" if decision.blocking else ("⚠️ existing, not blocking" if blocking else "✅ PASS")),
        (f"Other findings ({', '.join(s.name for s in other_levels) or 'none'})", str(len(others)), "⚠️ WARNING" if others else "✅ PASS"),
        ("Files analysed", str(len(report.files)), "—"),
        ("Files with findings", str(len({f.path for f in report.findings})), "—"),
        ("Findings suppressed by comments", str(len(report.suppressed)), "—"),
    ]
    if report.dynamic is None:
        note = report.dynamic_note
        state = f"not run ({note.removeprefix('not run: ')})" if note.startswith("not run: ") else note
        for label in ("AMP speedup over FP32", "Peak-memory reduction", "Accuracy degradation"):
            rows.append((label, "not measured", f"not measured: dynamic harness {state}"))
    elif report.dynamic.failure:
        rows.append(("Dynamic harness", "no figures", f"not measured: {report.dynamic.failure}"))
    elif report.dynamic.role == "calibration":
        rows.append(("Dynamic harness", "calibration", "not scored: the reference implementation was measured, not the analysed code"))
    else:
        for verdict in report.dynamic.verdicts:
            rows.append((verdict.label, figures.target_value(verdict.measured, verdict.unit),
                         dynamic_view.verdict_result(verdict)))
    return rows


def _recommendations(findings: list[Finding], link) -> list[Recommendation]:
    grouped: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        grouped[finding.code].append(finding)

    def impact(code: str) -> tuple:
        group = grouped[code]
        return (-max(f.severity for f in group), -max(f.heat for f in group), -len(group), code)

    result = []
    for code in sorted(grouped, key=impact):
        group = sorted(grouped[code])
        shown = ", ".join(link(f) for f in group[:5])
        more = f" and {len(group) - 5} more" if len(group) > 5 else ""
        noun = "place" if len(group) == 1 else "places"
        worst = min(group, key=lambda f: (-f.severity, f))
        result.append(
            Recommendation(
                code=code,
                name=worst.name,
                severity=worst.severity,
                places=f"{len(group)} {noun}: {shown}{more}",
                fix=worst.fix,
            )
        )
    return result


def _policy_sentence(report: Report) -> str:
    policy = report.policy
    severities = ", ".join(s.name for s in SEVERITY_ORDER if s in policy.block_on) or "no severity"
    scope = "new findings (against the baseline)" if policy.block_on_new_only and report.baseline else "findings"
    return (
        f"BLOCK on {severities} {scope}, on a measured dynamic target missed, "
        f"or on a score below {policy.min_score}; otherwise PASS."
    )


def _summary_sentence(report: Report) -> str:
    decision = report.decision
    if not decision.blocks:
        return "PASS: nothing found blocks this merge under the policy below."
    parts = []
    if decision.blocking:
        parts.append(f"{counted(len(decision.blocking), 'finding')} of blocking severity")
    if decision.missed:
        parts.append(f"{counted(len(decision.missed), 'measured target')} missed")
    if any(r.startswith("score ") for r in decision.reasons):
        parts.append(f"a score below {report.policy.min_score}")
    return f"BLOCK: {' and '.join(parts)} must be fixed before merging."

