"""The task id: the report's title and file name, so it must never name a path."""

from __future__ import annotations

import os
import re

from verifier.errors import UsageError

# Where the markdown report `<task>.md` goes unless --report-dir says otherwise.
DEFAULT_REPORT_DIR = "reports"
_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def validate_task(task: str) -> str:
    """A task id becomes a file name: letters, digits, `.`, `_`, `-`; never a path or `..`."""
    if not _TASK.fullmatch(task) or ".." in task:
        raise UsageError(
            f"--task {task!r}: use letters, digits, '.', '_' and '-' only (no path separators, no '..'), "
            "starting with a letter or digit"
        )
    return task


def default_task(first_path: str) -> str:
    """The first path's name (`examples/bad_train.py` → `bad_train`), made safe for a file name."""
    absolute = os.path.abspath(first_path)
    # A name with nothing on disk is standard input's --stdin-filename: a file name too.
    is_file = os.path.isfile(absolute) or not os.path.lexists(absolute)
    name = os.path.splitext(os.path.basename(absolute))[0] if is_file else os.path.basename(absolute)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-").replace("..", ".")
    return safe or "verify-perf"
