"""Tabulate each rule's measured precision on the judged real code, per severity.

Reads a JSON report of `score_realcode.py` (every repository of every set, one build) and writes
the table verify-perf ships (`rules/measured_precision.json`, shown by `verify-perf rule CODE`)
and its page in the docs (`docs/rule-precision.md`). Only judged findings count; a finding is
counted at the severity that build reported it with.

    python tests/realcode/score_realcode.py --verdicts tests/realcode/verdicts.json \\
        --mirrors ../.mirror --verifier-cmd "python -m verifier" --json-report score.json
    python -m tests.realcode.rule_precision score.json --build "$(git rev-parse --short HEAD)"
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from verifier.report.rule_precision import SEVERITIES, Counts, measured_precision_page

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "rules" / "measured_precision.json"
PAGE = ROOT / "docs" / "rule-precision.md"


def tabulate(report: dict, build: str) -> dict:
    """The shipped table: per rule, per severity, the judged TP / DEB / FP counts."""
    counts: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    sets = set()
    for repo in report["repos"]:
        sets.add(repo.get("set") or "given")
        for match in repo["matched"]:
            finding = match["finding"]
            counts[finding["code"]][finding["severity"]][match["verdict"]] += 1
    rules = {
        code: {
            severity: {"TP": c["TP"], "DEB": c["DEB"], "FP": c["FP"]}
            for severity in SEVERITIES if (c := by_severity.get(severity))
        }
        for code, by_severity in sorted(counts.items())
    }
    return {
        "schema": 1,
        "build": build,
        "repositories": len(report["repos"]),
        "sets": sorted(sets),
        "judged": sum(Counts.of(c).judged for by in rules.values() for c in by.values()),
        "rules": rules,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("score_report", type=Path, help="the --json-report of score_realcode.py")
    parser.add_argument("--build", required=True, help="the verify-perf commit that report measured")
    args = parser.parse_args(argv)
    table = tabulate(json.loads(args.score_report.read_text()), args.build)
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    PAGE.write_text(measured_precision_page(table))
    print(f"wrote {TABLE.relative_to(ROOT)} and {PAGE.relative_to(ROOT)}: {table['judged']} judged findings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
