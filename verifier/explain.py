"""`verify-perf rule`: print the documentation of the rules a selector names."""

from __future__ import annotations

import argparse
import json
import sys

from verifier.errors import EXIT_PASS, UsageError
from verifier.report.rule_docs import rule_markdown, rule_record


def run_rule_command(args: argparse.Namespace) -> int:
    from verifier.rules import all_rules, rule_by_selector

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
    return EXIT_PASS
