"""Standard output carries only the chosen format: while user code runs (importing the entry
point, the measured runs), what it prints goes to standard error.

Both levels are redirected: `sys.stdout` for `print`, and file descriptor 1 for what bypasses
Python (extensions writing with printf, child processes such as DataLoader workers started
meanwhile). Both are restored afterwards; a stream that is closed is left as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def user_output_to_stderr() -> Iterator[None]:
    python_stdout = sys.stdout
    if python_stdout is not None:
        _flush(python_stdout)
    saved_descriptor = _redirect_descriptor()
    if python_stdout is not None and sys.stderr is not None:
        sys.stdout = sys.stderr
    try:
        yield
    finally:
        if sys.stderr is not None:
            _flush(sys.stderr)
        if saved_descriptor is not None:
            os.dup2(saved_descriptor, 1)
            os.close(saved_descriptor)
        sys.stdout = python_stdout


def _redirect_descriptor() -> int | None:
    """Point descriptor 1 at descriptor 2; returns a copy of the old 1 to restore, or None."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved


def _flush(stream) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
