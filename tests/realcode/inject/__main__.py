"""`python -m tests.realcode.inject`: inject per-step costs into real training loops and report
the recall of verify-perf on them (see the package docstring)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from tests.realcode.inject.command_line import add_run_arguments, selected_targets
from tests.realcode.inject.path_kinds import KINDS
from tests.realcode.inject.report import print_report, summary
from tests.realcode.inject.runner import run_targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.realcode.inject",
        description="Insert per-step costs (probes) after the backward of real training loops, reached "
                    "through every path kind, run verify-perf on each copy and report its recall.")
    add_run_arguments(parser, keep_help="keep the injected copies under DIR for reading")
    parser.add_argument("--kind", action="append", choices=list(KINDS), help="only this path kind; repeatable")
    parser.add_argument("--json-report", metavar="FILE", help="write every outcome and the summary as JSON")
    parser.add_argument("--whole-repositories", action="store_true",
                        help="analyse each whole repository copy, not the scope the table narrows it to")
    args = parser.parse_args(argv)
    targets, repos = selected_targets(parser, args)
    progress = lambda text: print(text, file=sys.stderr, flush=True)
    started = time.monotonic()
    results = run_targets(targets, repos, args.mirrors, args.verifier_cmd, kinds=args.kind, jobs=args.jobs,
                          timeout=args.timeout, keep_dir=args.keep, whole_repositories=args.whole_repositories,
                          progress=progress)
    print_report(results, sys.stdout)
    print(f"{len(results.seconds)} verify-perf runs in {time.monotonic() - started:.0f} s ({args.jobs} at a time)")
    if args.json_report:
        with open(args.json_report, "w", encoding="utf-8") as handle:
            json.dump({
                "summary": summary(results),
                "outcomes": [o.as_dict() for o in results.outcomes],
                "skipped": [{"target": t, "kind": k, "why": w} for (t, k), w in sorted(results.skipped.items())],
                "errors": [{"target": t, "kind": k, "error": e} for (t, k), e in sorted(results.errors.items())],
                "seconds": [{"target": t, "kind": k, "seconds": round(s, 2)} for (t, k), s in results.seconds.items()],
            }, handle, indent=1)
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())
