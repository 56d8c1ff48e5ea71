"""`python -m tests.hostile`: run the hostile-input sweep and print the table by category."""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time

from tests.hostile.catalogue import all_cases
from tests.hostile.sweep import run_all
from tests.hostile.table import markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__)
    parser.add_argument("-j", "--jobs", type=int, default=2, help="cases run at a time (default 2)")
    parser.add_argument("-k", "--match", action="append", metavar="GLOB",
                        help="only cases whose category/name matches GLOB; repeatable")
    parser.add_argument("--fast", action="store_true", help="only the fast subset the default test run takes")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--keep", metavar="DIR", help="keep each case's folders under DIR")
    args = parser.parse_args(argv)
    cases = [c for c in all_cases() if not args.fast or c.fast]
    if args.match:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.ident, glob) for glob in args.match)]
    if args.list:
        print("\n".join(f"{c.ident}\texit {c.exit_code}{chr(9) + 'fast' if c.fast else ''}" for c in cases))
        return 0
    started = time.monotonic()

    def progress(outcome) -> None:
        if not outcome.passed:
            print(outcome.describe(), file=sys.stderr, flush=True)

    outcomes = run_all(cases, jobs=args.jobs, keep=args.keep, on_done=progress)
    print(markdown(outcomes))
    print(f"\n{len(outcomes)} cases, {sum(not o.passed for o in outcomes)} failed, "
          f"{time.monotonic() - started:.0f} s wall with {args.jobs} at a time")
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
