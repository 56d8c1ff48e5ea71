"""A rule's documentation from its own metadata, in ruff's layout (`verify-perf rule`, SARIF help)."""

from __future__ import annotations

from verifier.findings import Heat
from verifier.report.rule_precision import fix_is_stable, fix_lines, measured_lines, measured_record
from verifier.static.rule import Rule


def rule_markdown(rule: type[Rule]) -> str:
    severities = ", ".join(
        f"{heat.label}: {rule.severity.name_at(heat) or 'not reported'}"
        for heat in (Heat.STEP, Heat.EVAL, Heat.EPOCH, Heat.ONCE)
    )
    parts = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Category: {rule.category.value}. Severity by heat: {severities}.",
        "",
        *(["This rule is in preview: it runs only with `--preview` (or `preview = true`).", ""] if rule.preview else []),
        "## What it does",
        rule.summary,
        "",
        "## Why is this bad?",
        rule.why,
        "",
        "## Example",
        "```python",
        rule.example.rstrip("\n"),
        "```",
        "",
        "## Use instead",
        "```python",
        rule.use_instead.rstrip("\n"),
        "```",
        "",
        f"Fix: {rule.fix}",
        "",
        "## Automatic fix",
        *fix_lines(rule.code, rule.autofix, rule.autofix_safe),
    ]
    parts += ["", "## Measured on real code", *measured_lines(rule.code)]
    if rule.references:
        parts += ["", "## References", *(f"- {ref}" for ref in rule.references)]
    return "\n".join(parts) + "\n"


def rule_record(rule: type[Rule]) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "category": rule.category.value,
        "preview": rule.preview,
        "severity": {
            heat.label: rule.severity.name_at(heat)
            for heat in (Heat.STEP, Heat.EVAL, Heat.EPOCH, Heat.ONCE)
        },
        "summary": rule.summary,
        "why": rule.why,
        "example": rule.example,
        "use_instead": rule.use_instead,
        "fix": rule.fix,
        "autofix": {
            "change": rule.autofix,
            "applicability": "safe" if rule.autofix_safe else "unsafe",
            "preview": not fix_is_stable(rule.code),
        } if rule.autofix else None,
        "references": list(rule.references),
        "measured": measured_record(rule.code),
    }
