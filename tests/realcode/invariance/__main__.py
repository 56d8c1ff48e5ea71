"""`python -m tests.realcode.invariance`: rewrite probed real training loops and report whether
verify-perf's findings survive the rewrites that keep behaviour (see the package docstring)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.realcode.inject.command_line import add_run_arguments, selected_targets
from tests.realcode.invariance.kinds import KINDS, KINDS_BY_NAME
from tests.realcode.invariance.probed import ANCHORS
from tests.realcode.invariance.report import print_report, summary
from tests.realcode.invariance.runner import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.realcode.invariance",
        description="Probe real training loops, rewrite them with behaviour-preserving and behaviour-changing "
                    "codemods, run verify-perf on both sides of every pair and report the invariance rate.")
    add_run_arguments(parser, keep_help="keep every analysed copy under DIR for reading")
    parser.add_argument("--kind", action="append", choices=[k.name for k in KINDS],
                        help="only this rewrite kind; repeatable")
    parser.add_argument("--anchor", action="append", choices=list(ANCHORS),
                        help="only probes after this anchor (the backward, or the optimizer step); repeatable")
    parser.add_argument("--json-report", metavar="FILE", help="write every verdict and the summary as JSON")
    args = parser.parse_args(argv)
    targets, repos = selected_targets(parser, args)
    kinds = tuple(KINDS_BY_NAME[name] for name in args.kind) if args.kind else KINDS
    anchors = tuple(args.anchor) if args.anchor else ANCHORS
    progress = lambda text: print(text, file=sys.stderr, flush=True)
    started = time.monotonic()
    results = run(targets, repos, args.mirrors, args.verifier_cmd, kinds=kinds, anchors=anchors, jobs=args.jobs,
                  timeout=args.timeout, keep_dir=args.keep, progress=progress)
    print_report(results, sys.stdout)
    print(f"{results.runs} verify-perf runs in {time.monotonic() - started:.0f} s ({args.jobs} at a time)")
    if args.json_report:
        with open(args.json_report, "w", encoding="utf-8") as handle:
            json.dump({
                "summary": summary(results),
                "verdicts": [v.as_dict() for v in results.verdicts],
                "skipped": [{"pair": label, "kind": kind, "why": why} for label, kind, why in results.skipped],
                "errors": [{"pair": label, "kind": kind, "error": error} for label, kind, error in results.errors],
            }, handle, indent=1)
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
