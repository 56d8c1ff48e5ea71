"""Progress for long analyses on a terminal; nothing at all in CI, in pipes or with --quiet."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

# Below this many files a progress bar only flickers.
_MIN_FILES = 50


class _Silent:
    def start(self, total: int) -> None:
        pass

    def advance(self, _result) -> None:
        pass


class _Bar:
    def __init__(self, progress) -> None:
        self._progress = progress
        self._task = None

    def start(self, total: int) -> None:
        if total >= _MIN_FILES:
            self._progress.start()
            self._task = self._progress.add_task("Analysing", total=total)

    def advance(self, _result) -> None:
        if self._task is not None:
            self._progress.advance(self._task)


def wants_progress(enabled: bool) -> bool:
    return enabled and sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def analysis_progress(enabled: bool = True):
    """Yield an object with `start(total)` and `advance(result)`; draws on stderr only on a TTY."""
    if not wants_progress(enabled):
        yield _Silent()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    )
    try:
        yield _Bar(progress)
    finally:
        progress.stop()
