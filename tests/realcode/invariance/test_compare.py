"""Judging a pair from two lists of findings: kept through the line map, lost, gained, and the
behaviour-changing expectations."""

from __future__ import annotations

from tests.realcode.invariance.compare import compare, match
from tests.realcode.invariance.probed import Pair


def _finding(line: int, code: str, severity: str, heat: str = "step", path: str = "train.py") -> dict:
    return {"path": path, "line": line, "code": code, "severity": severity, "heat": heat, "message": "m"}


def _pair(kind: str, line_map: dict, rewritten_files=("train.py",)) -> Pair:
    return Pair("repo:train.py@backward", "owner/repo", kind, {"train.py": "original"},
                {path: "rewritten" for path in rewritten_files}, line_map,
                {("train.py", 20): "item", ("train.py", 21): "cuda_synchronize"}, "a note")


SHIFT_BY_TWO = {("train.py", n): ("train.py", n + 2) for n in range(1, 40)}


def test_findings_that_follow_their_lines_are_kept():
    kept, changes = match([_finding(10, "VP102", "LOW"), _finding(20, "VP201", "MEDIUM")],
                          [_finding(22, "VP201", "MEDIUM"), _finding(12, "VP102", "LOW")], SHIFT_BY_TWO)
    assert (kept, changes) == (2, [])


def test_a_changed_severity_is_one_finding_lost_and_one_gained():
    kept, changes = match([_finding(21, "VP203", "HIGH")], [_finding(23, "VP203", "LOW")], SHIFT_BY_TWO)
    assert kept == 0
    assert [c.describe() for c in changes] == [
        "lost VP203 HIGH step at train.py:21 (line now train.py:23)",
        "gained VP203 LOW step at train.py:23",
    ]


def test_a_finding_on_a_removed_line_is_lost_and_duplicates_are_counted():
    line_map = {**SHIFT_BY_TWO, ("train.py", 5): None}
    kept, changes = match([_finding(5, "VP306", "INFO"), _finding(9, "VP201", "MEDIUM"), _finding(9, "VP201", "MEDIUM")],
                          [_finding(11, "VP201", "MEDIUM")], line_map)
    assert kept == 1
    assert [c.describe() for c in changes] == [
        "lost VP306 INFO step at train.py:5 (line now removed)",
        "lost VP201 MEDIUM step at train.py:9 (line now train.py:11)",
    ]


def test_preserving_pair_counts_every_finding_of_the_touched_files_only():
    pair = _pair("extract_module", {**SHIFT_BY_TWO, ("train.py", 20): ("step.py", 4)}, ("train.py", "step.py"))
    original = [_finding(20, "VP201", "MEDIUM"), _finding(3, "VP103", "LOW", "once", path="data.py")]
    rewritten = [_finding(4, "VP201", "LOW", path="step.py"), _finding(3, "VP103", "LOW", "once", path="data.py")]
    verdict = compare(pair, True, original, rewritten)
    assert (verdict.compared, verdict.kept, verdict.holds) == (1, 0, False)
    assert [c.describe() for c in verdict.changes] == [
        "lost VP201 MEDIUM step at train.py:20 (line now step.py:4)",
        "gained VP201 LOW step at step.py:4",
    ]
    assert verdict.elsewhere == []


def test_a_guard_must_cool_or_soften_every_probe_that_was_found():
    pair = _pair("guard_probe", SHIFT_BY_TWO)
    original = [_finding(20, "VP201", "MEDIUM"), _finding(21, "VP203", "HIGH"), _finding(30, "VP102", "LOW")]
    softened = [_finding(22, "VP201", "LOW", "step"), _finding(32, "VP102", "LOW")]
    verdict = compare(pair, False, original, softened)
    assert verdict.holds
    assert [(p.probe, p.before, p.after, p.changed) for p in verdict.probes] == [
        ("item", "VP201 MEDIUM step", "VP201 LOW step", True),
        ("cuda_synchronize", "VP203 HIGH step", None, True),
    ]
    unchanged = [_finding(22, "VP201", "MEDIUM", "step"), _finding(32, "VP102", "LOW")]
    verdict = compare(pair, False, original, unchanged)
    assert not verdict.holds
    assert verdict.probes[0].changed is False
    assert verdict.changes == []


def test_a_move_after_the_loop_must_leave_each_probe_once_or_per_epoch():
    pair = _pair("move_after_loop", SHIFT_BY_TWO)
    original = [_finding(20, "VP201", "MEDIUM"), _finding(21, "VP203", "HIGH")]
    verdict = compare(pair, False, original, [_finding(22, "VP201", "MEDIUM", "epoch")])
    assert verdict.holds
    verdict = compare(pair, False, original, [_finding(23, "VP203", "HIGH", "step")])
    assert not verdict.holds
    assert [(p.probe, p.changed) for p in verdict.probes] == [("item", True), ("cuda_synchronize", False)]


def test_a_changing_pair_with_no_probe_found_before_does_not_hold():
    verdict = compare(_pair("guard_probe", SHIFT_BY_TWO), False, [], [])
    assert [p.changed for p in verdict.probes] == [None, None]
    assert not verdict.holds
