"""`verify-perf rule`: print the documentation of the rules a code, prefix or name selects.

JSON is one object for a rule named exactly (code or name), a list for a prefix or `--all`.
"""

from __future__ import annotations

import argparse
import json

from verifier.errors import EXIT_PASS, UsageError
from verifier.report.rule_docs import rule_markdown, rule_record
from verifier.stdout import require_stdout, write_stdout_safely
from verifier.writing import write_stdout


def run_rule_command(args: argparse.Namespace) -> int:
    from verifier.rules import all_rules, rule_by_selector

    if args.all:
        rules = list(all_rules())
    elif args.rule:
        rules = rule_by_selector(args.rule)
        if not rules:
            raise UsageError(f"unknown rule code, prefix or name {args.rule!r}; `verify-perf rule --all` lists them")
    else:
        raise UsageError("name a rule (`verify-perf rule VP201`), a prefix (`VP2`) or pass --all")
    if args.format == "json":
        payload = [rule_record(r) for r in rules]
        one = not args.all and _names_one_rule(args.rule, rules)
        text = json.dumps(payload[0] if one else payload, indent=2) + "\n"
    else:
        text = "\n".join(rule_markdown(r) for r in rules)
    require_stdout("the rules' documentation", "redirect it to a file")
    # In the terminal's encoding, characters it cannot show escaped (an ASCII locale failed on `µ`).
    write_stdout_safely(lambda: write_stdout(text))
    return EXIT_PASS


def _names_one_rule(selector: str, rules: list) -> bool:
    text = selector.strip()
    return len(rules) == 1 and (rules[0].code == text.upper() or rules[0].name == text.lower())
