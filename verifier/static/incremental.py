"""Reusing the last run's project pass when an edit leaves every project fact as it was.

A comment, a blank line, or a change inside a function body that adds or removes no call, loop,
binding or candidate, leaves a file's heat summary equal but for the lines it names. Call binding
and the heat fixed point over the whole project would then conclude what the last run over the
same files concluded, with those lines moved: every other file's findings stand (their traces and
evidence follow the moved lines), only the edited files are analysed, and those the project pass
judged again are judged with the project facts their last judgement read. Any other edit, or
anything missing from the cache, runs the whole project pass.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from verifier.findings import Finding, TraceStep
from verifier.static import cache_format
from verifier.static.engine import FileResult, ModuleAnalysis
from verifier.static.heat import FunctionFacts

# More edited files than this and the whole pass is as cheap as comparing them one by one.
_MOST_EDITED = 8


@dataclass
class RunRecord:
    """What the last run over these files (in this order, under these settings) concluded."""

    keys: list[str]
    # Each file's final result, without its analysis.
    files: list[FileResult]
    # Per file the project pass judged again: the project's facts that judgement read.
    judged_with: dict[str, dict[str, FunctionFacts]]
    # Files the project pass gave lines only because another file's heat trace passes through
    # them: an edit there can move a line that other findings show.
    lined: list[str]


def record_key(files: Sequence[str], wanted: Collection[int] | None) -> str:
    """The record of the last run over exactly these files (and, in diff mode, these reported ones)."""
    identity = b"\0".join(os.fsencode(path) for path in files) + b"\0\0" + repr(None if wanted is None else sorted(wanted)).encode()
    return "last-" + hashlib.sha256(identity).hexdigest()


def facts_digest(read: dict[str, FunctionFacts]) -> str:
    """The key part of a result judged with these project facts."""
    return hashlib.sha256(repr(sorted(read.items())).encode()).hexdigest()[:16]


def line_moves(before: FileResult, after: FileResult) -> dict[int, int] | None:
    """Each line the file's project inputs name (call sites, loops, definitions, candidates) to
    the line it is on now, when the file gives the project pass what it gave before but for those
    lines (equal heat summaries, local facts and candidates); None when anything else changed."""
    old, new = _project_inputs(before.analysis), _project_inputs(after.analysis)
    if old is None or new is None:
        return {} if old is None and new is None else None
    (old_form, old_lines), (new_form, new_lines) = old, new
    if old_form != new_form:
        return None
    moves: dict[int, int] = {}
    for line, now in zip(old_lines, new_lines):
        if moves.setdefault(line, now) != now:
            return None  # two things on one line were split apart: not a move of lines
    return moves


def _project_inputs(analysis: ModuleAnalysis | None) -> tuple[bytes, list] | None:
    if analysis is None or analysis.heat is None:
        return None
    inputs = (analysis.heat, analysis.local_facts, analysis.candidates, analysis.test_code)
    try:
        return cache_format.canonical(inputs, apart="line")
    except cache_format.Unencodable:
        return b"unencodable %d" % id(analysis), []  # never equal to another: the whole pass runs


class _Unmapped(Exception):
    """A line another file's result shows in a moved file is not one the summaries name."""


def _moved(path: str, line: int, moves: dict[str, dict[int, int]]) -> int:
    lines = moves.get(path)
    if lines is None or not line:
        return line
    if line not in lines:
        raise _Unmapped(f"{path}:{line}")
    return lines[line]


def _moved_steps(steps: tuple[TraceStep, ...], moves: dict[str, dict[int, int]]) -> tuple[TraceStep, ...]:
    return tuple(replace(step, line=_moved(step.path, step.line, moves)) for step in steps)


def _moved_finding(finding: Finding, moves: dict[str, dict[int, int]]) -> Finding:
    """The finding of an unchanged file, its trace and evidence pointing at the moved lines."""
    return replace(
        finding,
        heat_trace=_moved_steps(finding.heat_trace, moves),
        evidence=tuple(replace(item, line=_moved(item.path, item.line, moves)) for item in finding.evidence),
    )


def _moved_result(result: FileResult, moves: dict[str, dict[int, int]]) -> FileResult:
    return replace(
        result,
        findings=[_moved_finding(f, moves) for f in result.findings],
        suppressed=[_moved_finding(f, moves) for f in result.suppressed],
    )


def _moved_facts(read: dict[str, FunctionFacts], moves: dict[str, dict[int, int]]) -> dict[str, FunctionFacts]:
    return {
        key: replace(facts, trace=_moved_steps(facts.trace, moves), opt_in=_moved_steps(facts.opt_in, moves))
        for key, facts in read.items()
    }


@dataclass
class Reuse:
    """How to get what the record does not hold: a stored result by key, fresh first-pass
    results for some files, and one file judged with given project facts."""

    load: Callable[[str], FileResult | None]
    first_pass: Callable[[list[int]], list[FileResult]]
    judge: Callable[[int, dict[str, FunctionFacts]], FileResult]


def reuse_last_run(
    record: RunRecord | None, files: Sequence[str], keys: Sequence[str], reuse: Reuse,
) -> tuple[list[FileResult], RunRecord] | None:
    """Every file's final result, and the record for the next run, when the files edited since
    `record` give the project pass the same inputs (but for moved lines, which the other files'
    traces and the recorded facts follow); None when the whole project pass must run."""
    if record is None or len(record.keys) != len(files) or len(record.files) != len(files):
        return None
    if any(result.path != path for result, path in zip(record.files, files)):
        return None
    edited = [i for i, (before, now) in enumerate(zip(record.keys, keys)) if before != now]
    if len(edited) > _MOST_EDITED or any(files[i] in record.lined for i in edited):
        return None
    before = [reuse.load(record.keys[i]) for i in edited]
    if any(result is None or result.path != files[i] for result, i in zip(before, edited)):
        return None
    after = reuse.first_pass(edited)
    moves: dict[str, dict[int, int]] = {}
    for index, old, new in zip(edited, before, after):
        lines = line_moves(old, new)
        if lines is None:
            return None
        if any(line != now for line, now in lines.items()):
            moves[files[index]] = lines
    try:
        results = [result if not moves else _moved_result(result, moves) for result in record.files]
        judged_with = {path: _moved_facts(read, moves) if moves else read for path, read in record.judged_with.items()}
    except _Unmapped:
        return None
    for index, first in zip(edited, after):
        read = judged_with.get(files[index])
        if read is None:
            results[index] = first
            continue
        judged = reuse.judge(index, read)
        first.findings, first.suppressed = judged.findings, judged.suppressed
        first.internal_error = first.internal_error or judged.internal_error
        results[index] = first
    return results, replace(record, keys=list(keys), judged_with=judged_with)
