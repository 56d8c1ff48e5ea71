"""One `--fix` run: fix, analyse again, keep what holds, repeat until nothing is left to fix.

Each round applies the chosen fixes of every file in memory and analyses the project again with
the fixed texts standing in for the files (`verifier.static.source.stand_in`), so heat still comes
from the whole project and nothing is written yet. A file keeps its round's fixes only if every
fixed finding is gone from that analysis; otherwise the file gets none of them and is reported.
Rounds go on while fixes were kept and fixable findings remain (a fix that waited for an
overlapping one, a finding the new text offers), at most `MAX_ROUNDS` times, so that a second
`--fix` finds nothing left to do. Writing the files is the caller's step (`write`), so that
source read from standard input can be printed instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from verifier.findings import Finding
from verifier.fixes.apply import FixedText, FixFailed, apply_fixes
from verifier.fixes.plan import choose_fixes
from verifier.static.source import Source, UnreadableSource, decode_source, read_bytes, stand_in

MAX_ROUNDS = 10


class Analysis(Protocol):
    """What a run's analysis offers here (`verifier.check.Analysed`)."""

    # The reported findings, each with the fix this run may apply (`policy`).
    findings: list[Finding]
    # Every finding of the reported files, on every line (with `--diff` too).
    every_line: list[Finding]


@dataclass
class FixSession:
    """What a `--fix` run did, before anything is written."""

    # The findings fixed, as the first analysis reported them.
    fixed: list[Finding] = field(default_factory=list)
    # Files whose fixes were not kept, each with why.
    dropped: dict[str, str] = field(default_factory=dict)
    # Per fixed file, the bytes it held when read and the bytes it holds fixed.
    read: dict[str, bytes] = field(default_factory=dict)
    fixed_bytes: dict[str, bytes] = field(default_factory=dict)
    # The last analysis, made with the fixed texts standing in for their files.
    analysed: Analysis | None = None
    # Fixable findings were left after MAX_ROUNDS rounds.
    unfinished: bool = False


def fix_findings(
    analysed: Analysis, analyse: Callable[[], Analysis], *, unsafe: bool, max_size: int | None
) -> FixSession:
    """Fix what `analysed` offers; `analyse()` analyses the project again as it then reads."""
    session = FixSession(analysed=analysed)
    for _ in range(MAX_ROUNDS):
        chosen = choose_fixes(session.analysed.findings, unsafe=unsafe, skip=session.dropped)
        attempts = {}
        for path, findings in chosen.items():
            attempt = _attempt(path, findings, session, max_size)
            if attempt is not None:
                attempts[path] = attempt
        if not attempts:
            return session
        with _standing_in({**session.fixed_bytes, **{path: data for path, (data, _) in attempts.items()}}):
            again = analyse()
        failed = {path: why for path, (_, fixed) in attempts.items() if (why := _still_reported(fixed, path, again))}
        if failed:
            session.dropped.update(failed)
            for path in failed:
                del attempts[path]
            with _standing_in({**session.fixed_bytes, **{path: data for path, (data, _) in attempts.items()}}):
                again = analyse()
        for path, (data, fixed) in attempts.items():
            session.fixed_bytes[path] = data
            session.fixed.extend(fixed.applied)
        session.analysed = again
    session.unfinished = bool(choose_fixes(session.analysed.findings, unsafe=unsafe, skip=session.dropped))
    return session


def _attempt(path: str, findings: list[Finding], session: FixSession, max_size: int | None) -> tuple[bytes, FixedText] | None:
    """The file's text with these fixes applied, as bytes in its own encoding; None (the file
    dropped, with why) when they cannot be applied."""
    try:
        data = session.fixed_bytes.get(path)
        if data is None:
            data = read_bytes(path, max_size)
            session.read[path] = data
        source = decode_source(data)
        fixed = apply_fixes(source.text, findings)
        if fixed.stale:
            raise FixFailed("it changed since it was analysed")
        return _encoded(fixed.text, source), fixed
    except (UnreadableSource, FixFailed, UnicodeEncodeError) as problem:
        session.dropped[path] = str(problem)
        return None


def _encoded(text: str, source: Source) -> bytes:
    """`text` in the file's own encoding, with the byte order mark it had."""
    if source.encoding == "utf-8-sig":
        return text.encode("utf-8-sig")
    mark = "\ufeff" if source.data.decode(source.encoding).startswith("\ufeff") else ""
    return (mark + text).encode(source.encoding)


def _still_reported(fixed: FixedText, path: str, analysed: Analysis) -> str:
    """Why the fixes of `path` do not hold ("" when they do): a fixed finding is reported again,
    where its code moved to."""
    here = {(f.code, f.line, f.column) for f in analysed.every_line if f.path == path}
    for finding in fixed.applied:
        line, column = fixed.moved((finding.line, finding.column - 1))
        if (finding.code, line, column + 1) in here:
            return f"its {finding.code} finding at line {finding.line} is still reported after the fix"
    return ""


@contextlib.contextmanager
def _standing_in(texts: Mapping[str, bytes]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for path, data in texts.items():
            stack.enter_context(stand_in(path, data))
        yield
