"""Reusing the last run's project pass when an edit leaves every project fact as it was.

A comment, or a change inside a function body that moves no line the summaries hold and adds or
removes no call, loop, binding or candidate, leaves a file's heat summary equal. Call binding and
the heat fixed point over the whole project would then conclude what the last run over the same
files concluded, so every other file's findings stand: only the edited files are analysed, and
those the project pass judged again are judged with the project facts their last judgement read.
Any other edit, or anything missing from the cache, runs the whole project pass.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

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


def same_project_inputs(before: FileResult, after: FileResult) -> bool:
    """The file gives the project pass what it gave before: equal heat summaries, local facts and
    candidates (positions included), or no summary either time."""
    return _project_inputs(before.analysis) == _project_inputs(after.analysis)


def _project_inputs(analysis: ModuleAnalysis | None) -> bytes | None:
    if analysis is None or analysis.heat is None:
        return None
    try:
        return cache_format.canonical((analysis.heat, analysis.local_facts, analysis.candidates, analysis.test_code))
    except cache_format.Unencodable:
        return b"unencodable %d" % id(analysis)  # never equal to another: the whole pass runs


@dataclass
class Reuse:
    """How to get what the record does not hold: a stored result by key, fresh first-pass
    results for some files, and one file judged with given project facts."""

    load: Callable[[str], FileResult | None]
    first_pass: Callable[[list[int]], list[FileResult]]
    judge: Callable[[int, dict[str, FunctionFacts]], FileResult]


def reuse_last_run(record: RunRecord | None, files: Sequence[str], keys: Sequence[str], reuse: Reuse) -> list[FileResult] | None:
    """Every file's final result when only files whose project inputs are unchanged were edited
    since `record`; None when the whole project pass must run."""
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
    if not all(same_project_inputs(old, new) for old, new in zip(before, after)):
        return None
    results = list(record.files)
    for index, first in zip(edited, after):
        read = record.judged_with.get(files[index])
        if read is None:
            results[index] = first
            continue
        judged = reuse.judge(index, read)
        first.findings, first.suppressed = judged.findings, judged.suppressed
        first.internal_error = first.internal_error or judged.internal_error
        results[index] = first
    return results
