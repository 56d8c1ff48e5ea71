"""Baseline matching: fingerprints survive line shifts; new/existing/fixed; measured regressions."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.report.conftest import make_dynamic, make_finding, make_report
from verifier.dynamic.timing import summarize
from verifier.report.baseline import compare, fingerprints, load_baseline
from verifier.report.json_format import render_json
from verifier.errors import UsageError


def store(tmp_path, findings, dynamic=None):
    path = tmp_path / "baseline.json"
    path.write_text(render_json(make_report(findings, dynamic=dynamic)), encoding="utf-8")
    return load_baseline(str(path))


def test_fingerprint_ignores_line_numbers_and_indentation():
    before = make_finding(line=10, source="        total = loss.item()")
    after = make_finding(line=42, source="    total  =  loss.item()")
    assert fingerprints([before])[before] == fingerprints([after])[after]


def test_repeated_identical_lines_get_distinct_fingerprints():
    first, second = make_finding(line=10), make_finding(line=20)
    prints = fingerprints([second, first])
    assert prints[first] != prints[second]


def test_new_existing_and_fixed(tmp_path):
    kept = make_finding(line=10)
    gone = make_finding("VP203", line=30, source="torch.cuda.synchronize()", name="synchronize-in-loop")
    baseline = store(tmp_path, [kept, gone])
    moved = replace(kept, line=14, end_line=14)
    added = make_finding("VP202", line=50, source="print(loss.item())", name="repeated-item")
    comparison = compare([moved, added], baseline, None, tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.existing == [moved]
    assert comparison.new == [added]
    assert [(s.code, s.line) for s in comparison.fixed] == [("VP203", 30)]
    assert comparison.baseline_score == make_report([kept, gone]).scorecard.total


def test_measured_regressions_on_the_same_device(tmp_path):
    baseline = store(tmp_path, [], dynamic=make_dynamic(speedup=2.0))
    comparison = compare([], baseline, make_dynamic(speedup=1.6), tolerance=0.05, max_accuracy_drop=0.01)
    assert [(r.mode, r.metric) for r in comparison.regressions] == [("fp16", "step time (median)")]
    assert comparison.regressions[0].note == "1.25x slower"


def test_figures_from_another_device_are_not_compared(tmp_path):
    baseline = store(tmp_path, [], dynamic=make_dynamic())
    other = make_dynamic(device=replace(make_dynamic().device, name="NVIDIA A10G"))
    comparison = compare([], baseline, other, tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.regressions == ()
    assert comparison.measured_note == (
        "measured figures not compared: a different workload fingerprint "
        "(device 'NVIDIA H100 80GB HBM3 (cuda)' -> 'NVIDIA A10G (cuda)')"
    )


def test_another_workload_on_the_same_device_is_not_compared(tmp_path):
    baseline = store(tmp_path, [], dynamic=make_dynamic())
    longer = make_dynamic(method=replace(make_dynamic().method, steps=40))
    comparison = compare([], baseline, longer, tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.regressions == ()
    assert comparison.measured_note == "measured figures not compared: a different workload fingerprint (steps 20 -> 40)"


def test_a_rerun_whose_intervals_overlap_is_no_regression(tmp_path):
    # The same code again on a noisy machine: the median is 2.1x worse, the repeats overlap.
    def noisy(samples):
        run = make_dynamic()
        fp32 = replace(run.modes[0], step_time=summarize(samples))
        return replace(run, modes=(fp32, *run.modes[1:]))

    baseline = store(tmp_path, [], dynamic=noisy([10.0, 11.0, 12.0, 30.0, 31.0]))
    comparison = compare([], baseline, noisy([10.5, 25.0, 25.5, 26.0, 32.0]), tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.regressions == ()
    slower = compare([], baseline, noisy([40.0, 41.0, 42.0, 43.0, 44.0]), tolerance=0.05, max_accuracy_drop=0.01)
    assert [(r.mode, r.metric, r.note) for r in slower.regressions] == [("fp32", "step time (median)", "3.50x slower")]


@pytest.mark.parametrize(
    "content",
    ["not json", json.dumps({"findings": "nope"}), json.dumps([1]), json.dumps({"findings": [], "rules": "VP2"})],
)
def test_a_bad_baseline_file_is_a_usage_error(tmp_path, content):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(UsageError, match="--baseline"):
        load_baseline(str(path))


def test_only_what_ran_is_judged_fixed(tmp_path):
    sync = make_finding("VP203", line=30, source="torch.cuda.synchronize()", name="synchronize-in-loop")
    elsewhere = make_finding(line=12, path="other.py")
    baseline = store(tmp_path, [sync, elsewhere])
    comparison = compare([], baseline, None, tolerance=0.05, max_accuracy_drop=0.01,
                         ran=lambda path, code: path == sync.path and code.startswith("VP2"))
    assert [(s.code, s.path) for s in comparison.fixed] == [("VP203", sync.path)]
    assert [(s.code, s.path) for s in comparison.not_compared] == [("VP201", "other.py")]


def test_states_only_for_reported_findings_but_every_line_counts_as_present(tmp_path):
    first, second = make_finding(line=10), make_finding(line=20)
    baseline = store(tmp_path, [first, second])
    comparison = compare([first, second], baseline, None, tolerance=0.05, max_accuracy_drop=0.01, reported=[second])
    assert comparison.existing == [second]
    assert comparison.fixed == ()


def test_a_baseline_without_recorded_rules_compares_its_score(tmp_path):
    path = tmp_path / "old.json"
    document = json.loads(render_json(make_report([make_finding()])))
    del document["rules"]
    path.write_text(json.dumps(document))
    baseline = load_baseline(str(path))
    assert baseline.rules is None
    comparison = compare([], baseline, None, tolerance=0.05, max_accuracy_drop=0.01, rules=["VP201"])
    assert comparison.score_compared and comparison.comparable_score == baseline.score


def test_an_integer_past_the_digit_limit_is_refused_before_conversion(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(render_json(make_report([make_finding()])).replace('"line": 10', '"line": ' + "9" * 5000))
    with pytest.raises(UsageError) as raised:
        load_baseline(str(path))
    assert str(raised.value) == (
        f"--baseline {path}: not a verify-perf JSON report (an integer of 5000 digits (at most 30 are read))"
    )


def with_samples(samples):
    run = make_dynamic()
    return replace(run, modes=(replace(run.modes[0], step_time=summarize(samples)), *run.modes[1:]))


def test_a_dynamic_baseline_with_more_samples_than_a_run_records_is_refused_at_once(tmp_path):
    """200,000 stored samples took minutes to compare (2,000 bootstrap rounds of each): refused
    while loading, before any comparison, in well under a second."""
    import time

    path = tmp_path / "baseline.json"
    path.write_text(render_json(make_report([], dynamic=with_samples([10.0 + (i % 7) / 10 for i in range(200_000)]))))
    assert path.stat().st_size > 4_000_000
    started = time.perf_counter()
    with pytest.raises(UsageError) as raised:
        load_baseline(str(path))
    assert time.perf_counter() - started < 5
    assert str(raised.value) == (
        f"--baseline {path}: refused: mode 'fp32' holds 200,000 step-time samples, over the limit of 1,000 "
        "(a run records one per timed repeat)"
    )


def test_a_dynamic_baseline_at_the_sample_limit_is_compared(tmp_path):
    baseline = store(tmp_path, [], dynamic=with_samples([10.0 + (i % 7) / 10 for i in range(1_000)]))
    comparison = compare([], baseline, with_samples([30.0, 31.0, 32.0]), tolerance=0.05, max_accuracy_drop=0.01)
    assert [(r.mode, r.metric) for r in comparison.regressions] == [("fp32", "step time (median)")]


@pytest.mark.parametrize("figure", ['"fast"', "[1]", "true"])
def test_stored_figures_that_are_not_numbers_are_refused(tmp_path, figure):
    path = tmp_path / "baseline.json"
    document = json.loads(render_json(make_report([], dynamic=make_dynamic())))
    document["dynamic"]["result"]["modes"][0]["step_time"]["median_ms"] = json.loads(figure)
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError) as raised:
        load_baseline(str(path))
    assert str(raised.value) == f"--baseline {path}: refused: a figure of mode 'fp32' is not a finite number"


def test_a_finding_hotter_or_more_severe_than_the_stored_one_is_new(tmp_path):
    from verifier.findings import Heat, Severity

    once = make_finding("VP301", line=10, severity=Severity.CRITICAL, heat=Heat.EPOCH)
    medium = make_finding("VP201", line=20, source="    y = loss.item()")
    baseline = store(tmp_path, [once, medium])
    hotter = replace(once, heat=Heat.STEP)
    worse = replace(medium, severity=Severity.HIGH)
    same = replace(medium, severity=Severity.LOW)  # less severe: still the accepted finding
    comparison = compare([hotter, worse], baseline, None, tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.new == [hotter, worse] and comparison.fixed == ()
    comparison = compare([replace(once, heat=Heat.ONCE), same], baseline, None, tolerance=0.05, max_accuracy_drop=0.01)
    assert comparison.new == [] and len(comparison.existing) == 2


def test_identical_findings_in_two_files_pair_with_their_own_file_first(tmp_path):
    here = make_finding(path="a.py")
    there = make_finding(path="b.py")
    baseline = store(tmp_path, [here, there])
    # b.py no longer has it: its stored finding, not a.py's, is the one fixed.
    comparison = compare([here], baseline, None, tolerance=0.05, max_accuracy_drop=0.01,
                         ran=lambda path, code: True)
    assert comparison.existing == [here]
    assert [(s.path, s.code) for s in comparison.fixed] == [("b.py", "VP201")]


@pytest.mark.parametrize("samples", ["20.0", '"20"', "null", '{"a": 1}'])
def test_step_time_samples_that_are_not_a_list_are_refused(tmp_path, samples):
    # A number there was an internal error (`len()` of a float) instead of a refusal.
    path = tmp_path / "baseline.json"
    document = json.loads(render_json(make_report([], dynamic=make_dynamic())))
    document["dynamic"]["result"]["modes"][0]["step_time"]["samples_ms"] = json.loads(samples)
    path.write_text(json.dumps(document))
    with pytest.raises(UsageError) as raised:
        load_baseline(str(path))
    assert str(raised.value) == f"--baseline {path}: refused: the step-time samples of mode 'fp32' are not a list"
