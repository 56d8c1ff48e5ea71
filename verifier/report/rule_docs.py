"""`verify-perf rule CODE`: a rule's documentation from its own metadata, in ruff's layout."""

from __future__ import annotations

import json
import sys

from verifier.findings import Heat
from verifier.static.discovery import UsageError
from verifier.static.rule import Rule


def rule_markdown(rule: type[Rule]) -> str:
    severities = ", ".join(
        f"{heat.label}: {rule.severity.name_at(heat) or 'not reported'}"
        for heat in (Heat.STEP, Heat.EPOCH, Heat.ONCE)
    )
    parts = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Category: {rule.category.value}. Severity by heat: {severities}.",
        "",
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
    ]
    if rule.references:
        parts += ["", "## References", *(f"- {ref}" for ref in rule.references)]
    return "\n".join(parts) + "\n"


def rule_record(rule: type[Rule]) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "category": rule.category.value,
        "severity": {
            heat.label: rule.severity.name_at(heat)
            for heat in (Heat.STEP, Heat.EPOCH, Heat.ONCE)
        },
        "summary": rule.summary,
        "why": rule.why,
        "example": rule.example,
        "use_instead": rule.use_instead,
        "fix": rule.fix,
        "references": list(rule.references),
    }


def run_rule_command(argv: list[str]) -> int:
    from verifier.cli import _Parser
    from verifier.rules import all_rules, rule_by_selector

    parser = _Parser(prog="verify-perf rule", description="Explain a rule (code or name).")
    parser.add_argument("rule", nargs="?", help="rule code (VP201) or name (sync-in-hot-loop)")
    parser.add_argument("--all", action="store_true", help="explain every rule")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    if args.all:
        rules = list(all_rules())
    elif args.rule:
        rules = [r for r in rule_by_selector(args.rule) if r.code == args.rule.upper() or r.name == args.rule.lower()]
        if not rules:
            raise UsageError(f"unknown rule {args.rule!r}; `verify-perf rule --all` lists them")
    else:
        raise UsageError("name a rule (`verify-perf rule VP201`) or pass --all")
    if args.format == "json":
        payload = [rule_record(r) for r in rules]
        sys.stdout.write(json.dumps(payload if args.all else payload[0], indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(rule_markdown(r) for r in rules))
    return 0
