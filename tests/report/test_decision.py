"""PASS/BLOCK policy: blocking severities, missed targets, minimum score, new-only with a baseline."""

from __future__ import annotations

from tests.report.conftest import make_dynamic, make_finding
from verifier.dynamic.results import VerdictStatus, Workload
from verifier.findings import Severity
from verifier.report.decision import Policy, decide


def test_pass_without_findings():
    decision = decide([], score=100)
    assert decision.status == "PASS" and decision.reasons == ()


def test_critical_and_high_block_by_default_listed_most_severe_first():
    high = make_finding("VP203", line=3, severity=Severity.HIGH, name="synchronize-in-loop")
    critical = make_finding("VP301", line=9, severity=Severity.CRITICAL, name="optimizer-step-bypasses-scaler")
    medium = make_finding("VP201", line=1)
    decision = decide([medium, high, critical], score=80)
    assert decision.status == "BLOCK"
    assert decision.blocking == (critical, high)
    assert decision.reasons[0].startswith("CRITICAL VP301 optimizer-step-bypasses-scaler at train.py:9:")


def test_block_on_is_configurable():
    high = make_finding("VP203", severity=Severity.HIGH)
    assert decide([high], Policy(block_on=frozenset({Severity.CRITICAL})), score=90).status == "PASS"


def test_score_below_minimum_blocks():
    decision = decide([make_finding()], Policy(min_score=70), score=69)
    assert decision.reasons == ("score 69/100 is below the minimum 70",)


def test_a_missed_measured_target_blocks_but_not_evaluated_does_not():
    missed = decide([], score=100, dynamic=make_dynamic(speedup_status=VerdictStatus.MISS, speedup=1.1))
    assert missed.status == "BLOCK"
    assert missed.reasons == ("measured target missed: AMP speedup over FP32 (fp16): 1.10x (target >= 1.50x)",)
    assert decide([], score=100, dynamic=make_dynamic()).status == "PASS"


def test_new_only_ignores_existing_blocking_findings():
    old = make_finding("VP203", line=3, severity=Severity.HIGH)
    new = make_finding("VP301", line=9, severity=Severity.CRITICAL)
    policy = Policy(block_on_new_only=True)
    assert decide([old], policy, score=90, new_findings=[]).status == "PASS"
    assert decide([old, new], policy, score=90, new_findings=[new]).blocking == (new,)


def test_new_only_blocks_a_low_score_only_when_it_fell_below_the_baseline():
    policy = Policy(min_score=70, block_on_new_only=True)
    assert decide([], policy, score=50, new_findings=[], baseline_score=50).status == "PASS"
    assert decide([], policy, score=49, new_findings=[], baseline_score=50).status == "BLOCK"


def test_a_missed_target_of_a_calibration_run_never_blocks():
    calibration = make_dynamic(workload=Workload(source="preset", name="gpu"), speedup_status=VerdictStatus.MISS, speedup=1.1)
    decision = decide([], score=100, dynamic=calibration)
    assert decision.status == "PASS" and decision.missed == ()
