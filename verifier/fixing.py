"""`--fix` in a check run: fix the reported findings, put the fixed files in place, and say on
standard error what could not be done.

Only reported findings are fixed: with `--diff`, those the change introduced; never a suppressed
one. Source read from standard input is not written anywhere: its fixed text is printed on
standard output instead (`print_fixed_source`), as ruff does. A file that could not be written
makes the run end with exit 2, and the findings are then those of the files as they are on disk.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from verifier.findings import Finding
from verifier.fixes.session import MAX_ROUNDS, Analysis, fix_findings
from verifier.fixes.write import NotWritten, rewrite_source
from verifier.static.discovery import display_path
from verifier.static.source import UnreadableSource, read_bytes


@dataclass(frozen=True)
class FixRun:
    """The analysis after the fixes, the findings fixed (as first reported), the fixed bytes of
    each file, and whether a fixed file could not be written."""

    analysed: Analysis
    fixed: tuple[Finding, ...]
    fixed_bytes: dict[str, bytes]
    failed: bool


def fix_and_write(analysed: Analysis, analyse: Callable[[], Analysis], *, unsafe: bool, max_size: int | None,
                  write: bool = True) -> FixRun:
    """Fix what `analysed` reports; `analyse()` runs the same analysis again. With `write`, each
    fixed file replaces the original; without (standard input), nothing is written."""
    session = fix_findings(analysed, analyse, unsafe=unsafe, max_size=max_size)
    for path, why in sorted(session.dropped.items()):
        _warn(f"{display_path(path)}: fixes not applied: {why}")
    if session.unfinished:
        _warn(f"fixable findings remain after {MAX_ROUNDS} rounds of fixes; run --fix again")
    unwritten = set()
    if write:
        for path in sorted(session.fixed_bytes):
            try:
                rewrite_source(path, session.read[path], session.fixed_bytes[path])
            except NotWritten as problem:
                unwritten.add(path)
                print(f"verify-perf: {display_path(path)}: cannot write the fixed file: {problem}", file=sys.stderr)
    fixed = tuple(f for f in session.fixed if f.path not in unwritten)
    # The last analysis read the fixed texts; a file left as it was must be read as it is.
    final = analyse() if unwritten else session.analysed
    return FixRun(final, fixed, session.fixed_bytes, bool(unwritten))


def print_fixed_source(path: str, fixed_bytes: dict[str, bytes], max_size: int | None) -> None:
    """Standard input's source, fixed or as it came, on standard output (its bytes unchanged)."""
    data = fixed_bytes.get(path)
    if data is None:
        try:
            data = read_bytes(path, max_size)
        except UnreadableSource:
            return  # over the size limit, not read in full: reported as VP900, nothing to print

    stream = getattr(sys.stdout, "buffer", None)
    sys.stdout.flush()
    if stream is None:
        sys.stdout.write(data.decode("utf-8", "surrogateescape"))
        return
    stream.write(data)
    stream.flush()


def _warn(message: str) -> None:
    print(f"verify-perf: warning: {message}", file=sys.stderr)
