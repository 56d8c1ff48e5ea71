"""The score formula: severity dominates count, repeats decay, categories are bounded."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from tests.report.conftest import make_dynamic, make_finding
from verifier.dynamic.results import ModeResult, VerdictStatus, Workload
from verifier.findings import Severity
from verifier.report.scoring import AMP, CALIBRATION_NOTE, DATA, MEASURED, MEMORY, SYNC, score


def test_no_findings_scores_100_on_static_categories_only():
    card = score([])
    assert card.total == 100
    assert card.static_only
    assert not card.category(MEASURED).scored
    assert "not run" in card.category(MEASURED).note


def test_info_findings_cost_nothing():
    assert score([make_finding("VP900", severity=Severity.INFO)]).total == 100


def test_one_critical_costs_more_than_many_lows():
    lows = [make_finding("VP305", line=n, severity=Severity.LOW) for n in range(1, 200)]
    critical = [make_finding("VP301", severity=Severity.CRITICAL)]
    assert score(critical).total < score(lows).total


def test_a_high_costs_more_than_any_number_of_repeats_of_one_medium():
    mediums = [make_finding("VP201", line=n) for n in range(1, 200)]
    high = [make_finding("VP203", severity=Severity.HIGH)]
    assert score(high).total < score(mediums).total


def test_repeats_of_one_rule_cost_less_each_time():
    costs = []
    for count in range(1, 5):
        card = score([make_finding("VP201", line=n) for n in range(count)])
        costs.append(card.category(SYNC).max_points - card.category(SYNC).points)
    increments = [b - a for a, b in zip([Fraction(0), *costs], costs)]
    assert increments == sorted(increments, reverse=True)
    assert increments[1] == increments[0] / 2


def test_a_category_never_loses_more_than_its_share():
    findings = [make_finding("VP301", line=n, severity=Severity.CRITICAL) for n in range(5)]
    card = score(findings)
    assert card.category(AMP).points == 0
    assert card.total == 75
    assert card.category(MEMORY).points == card.category(MEMORY).max_points == 25


def test_exact_example_one_medium_is_five_points():
    card = score([make_finding("VP101", category=make_finding("VP101").category)])
    assert card.category(DATA).points == 20
    assert card.total == 95


def test_any_cost_shows_below_100():
    assert score([make_finding("VP305", severity=Severity.LOW)]).total == 98


def test_unchecked_categories_are_not_scored():
    card = score([], checked=frozenset({SYNC}))
    assert [c.name for c in card.categories if c.scored] == [SYNC]
    assert card.category(SYNC).max_points == 100


def test_measured_performance_is_scored_from_judged_verdicts_only():
    card = score([], make_dynamic())
    measured = card.category(MEASURED)
    assert measured.scored and not card.static_only
    # Two targets met, and two user syncs per step earn 1/3 of the sync term: (2 + 1/3) / 3 of 20.
    assert measured.max_points == 20
    assert measured.points == Fraction(140, 9)
    assert measured.note == "2 of 2 measured targets met; user host syncs per step 2 (credit 1/3)"


def test_no_user_sync_earns_the_full_sync_term():
    clean = make_dynamic()
    clean = replace(clean, modes=tuple(replace(m, user_syncs_per_step=0.0 if m.ok else None) for m in clean.modes))
    measured = score([], clean).category(MEASURED)
    assert measured.points == measured.max_points == 20
    assert measured.note == "2 of 2 measured targets met; user host syncs per step 0 (credit 1)"


def test_measured_syncs_alone_score_the_category_on_cpu():
    cpu = make_dynamic(verdicts=())
    measured = score([], cpu).category(MEASURED)
    assert measured.points == Fraction(20, 3)
    assert measured.note == "0 of 0 measured targets met; user host syncs per step 2 (credit 1/3)"


def test_a_missed_target_costs_its_share_of_measured_performance():
    card = score([], make_dynamic(speedup_status=VerdictStatus.MISS, speedup=1.1))
    assert card.category(MEASURED).points == Fraction(80, 9)  # (1 + 1/3) / 3 of 20
    assert card.total == 88


def test_a_calibration_run_of_the_reference_is_never_scored():
    calibration = make_dynamic(workload=Workload(source="preset", name="gpu"), speedup_status=VerdictStatus.MISS, speedup=1.1)
    card = score([make_finding("VP201", severity=Severity.MEDIUM)], calibration)
    assert card.static_only
    assert card.total == score([make_finding("VP201", severity=Severity.MEDIUM)]).total == 95
    assert card.category(MEASURED).note == CALIBRATION_NOTE


def test_a_run_where_every_mode_failed_is_not_scored():
    failed = make_dynamic(modes=(ModeResult(mode="fp32", dtype="float32", error="setup raised ValueError: no data"),))
    card = score([], failed)
    assert card.static_only
    assert card.category(MEASURED).note == (
        "the harness could not measure (every mode failed: fp32: setup raised ValueError: no data)"
    )


def test_a_harness_error_leaves_measured_performance_unscored():
    card = score([], make_dynamic(error="CUDA out of memory"))
    assert card.static_only
    assert "CUDA out of memory" in card.category(MEASURED).note
