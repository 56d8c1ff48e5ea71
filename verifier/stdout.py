"""Standard output that is closed, full or a pipe whose reader has gone, handled as ruff does.

`verify-perf . | head` ends quietly when `head` stops reading: the exit code stays the run's.
Output that cannot be written for any other reason (`> /dev/full`, `>&-`) is one clear line and
exit 2, never a traceback, and never Python's "Exception ignored" when it flushes at exit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from verifier.errors import UsageError


def hold_standard_descriptors() -> None:
    """Open /dev/null on a closed descriptor 0, 1 or 2, so that no file this run opens takes its
    number (a report written to descriptor 1 would also receive what a child prints)."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != descriptor:
                os.dup2(opened, descriptor)
                os.close(opened)
    if sys.stderr is None:  # print(file=None) would write messages to standard output
        sys.stderr = open(os.devnull, "w")


def stdout_closed() -> bool:
    """The process started with standard output closed (`>&-`)."""
    return sys.stdout is None


def require_stdout(what: str, remedy: str = "write it to a file with -o FILE") -> None:
    if stdout_closed():
        raise UsageError(f"standard output is closed: nowhere to write {what} ({remedy})")


def write_stdout_safely(write: Callable[[], None]) -> None:
    """Run `write`, which writes standard output: a reader that has gone ends the output quietly;
    any other failure is a usage error."""
    try:
        write()
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
    except OSError as error:
        discard_stdout()
        raise UsageError(f"cannot write standard output: {error.strerror or error}") from None


def discard_stdout() -> None:
    """Point descriptor 1 at /dev/null, so that what is still buffered goes nowhere at exit
    instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass
