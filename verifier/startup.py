"""Ctrl-C while verify-perf is still starting (importing libcst, jinja2 and its own modules) ends
it as Ctrl-C during a run does: one line and exit 2, never the traceback of an import.

Both entry points (`verify-perf`, `python -m verifier`) call `guard_startup` before importing
anything else and hand SIGINT back to Python's own handler once `verifier.cli` is loaded: from
then on `main` turns a KeyboardInterrupt into the same line and exit code. Only an
interrupt the process would have received is caught: a SIGINT ignored from the start (a job started
in the background) stays ignored. Importing this module changes nothing.
"""

from __future__ import annotations

import signal
import sys


def _interrupted(number, frame) -> None:
    sys.stderr.write("verify-perf: interrupted\n")
    raise SystemExit(2)


def guard_startup() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted)


def end_startup() -> None:
    """From here on Ctrl-C is a KeyboardInterrupt again, which the run handles."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run() -> int:
    """The `verify-perf` console script."""
    guard_startup()
    from verifier.cli import main

    end_startup()
    return main()
