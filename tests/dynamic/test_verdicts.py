"""Verdicts: PASS/MISS only from measured values; everything else NOT_EVALUATED with a reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifier.dynamic.intervals import seed_band
from verifier.dynamic.results import AccuracyRun, MemorySplit, ModeResult, StepTiming, Thresholds, VerdictStatus
from verifier.dynamic.timing import summarize
from verifier.dynamic.verdicts import ACTIVATIONS_BASIS, CPU_REASON, SPEEDUP_BASES, judge, paired_differences


def mode(name: str, ms: float | None = 10.0, peak: int | None = 1000, accuracy: float | None = 0.9, error: str | None = None) -> ModeResult:
    timing = StepTiming(ms, ms, ms, ms, ms) if ms is not None else None
    return ModeResult(name, name, step_time=timing, peak_memory_bytes=peak, accuracy=accuracy, error=error)


def seeded(name: str, accuracies: list[float], ms: float = 10.0, peak: int = 1000, **figures) -> ModeResult:
    """A mode whose accuracy is the mean of seeded runs (seeds 0, 1, ...), as the harness makes it."""
    runs = tuple(AccuracyRun(seed, accuracy, 1.0, 3.4, 1.5) for seed, accuracy in enumerate(accuracies))
    return ModeResult(
        name, name, step_time=StepTiming(ms, ms, ms, ms, ms), peak_memory_bytes=peak,
        accuracy=sum(accuracies) / len(accuracies), accuracy_runs=runs, chance_accuracy=1 / 32, **figures,
    )


def by_name(verdicts):
    return {v.name: v for v in verdicts}


def test_on_cpu_speed_and_memory_are_not_evaluated_with_the_reason():
    verdicts = by_name(judge((mode("fp32", 10.0, None), mode("bf16", 40.0, None)), Thresholds(), "cpu", None, ""))
    assert verdicts["speedup"].status is VerdictStatus.NOT_EVALUATED
    assert verdicts["speedup"].reason == CPU_REASON
    assert verdicts["speedup"].measured == 0.25
    assert verdicts["memory_reduction"].status is VerdictStatus.NOT_EVALUATED
    assert verdicts["memory_reduction"].reason == CPU_REASON
    assert verdicts["memory_reduction"].measured is None
    # Single runs: the accuracy difference is shown, never judged.
    assert verdicts["accuracy_degradation"].status is VerdictStatus.NOT_EVALUATED
    assert verdicts["accuracy_degradation"].reason.startswith("not judged: one run, no band (FP32 0.9000 - bf16 0.9000 = +0.0000)")
    assert CPU_REASON == "not evaluated on CPU: speed and memory targets are judged on a CUDA device"


def test_cuda_targets_pass_and_miss_on_measured_values():
    passing = by_name(judge((seeded("fp32", [0.90, 0.91], 30.0, 1000), seeded("bf16", [0.895, 0.905], 10.0, 500)), Thresholds(), "cuda", False, "GPU busy 95% of the FP32 step"))
    assert [passing[n].status for n in ("speedup", "memory_reduction", "accuracy_degradation")] == [VerdictStatus.PASS] * 3
    assert passing["speedup"].measured == 3.0
    assert passing["memory_reduction"].measured == 0.5
    assert passing["speedup"].reason == "3.00x >= 1.5x"

    missing = by_name(judge((seeded("fp32", [0.90, 0.91], 12.0, 1000), seeded("fp16", [0.85, 0.86], 10.0, 900)), Thresholds(), "cuda", False, "GPU busy 95% of the FP32 step"))
    assert [missing[n].status for n in ("speedup", "memory_reduction", "accuracy_degradation")] == [VerdictStatus.MISS] * 3
    assert missing["speedup"].reason == "1.20x < 1.5x; GPU busy 95% of the FP32 step"


def test_overhead_bound_workload_does_not_miss_the_speedup():
    verdict = by_name(judge((mode("fp32", 10.0), mode("bf16", 9.0)), Thresholds(), "cuda", True, "GPU busy 20% of the FP32 step", "the gpu preset is sized to be compute-bound"))["speedup"]
    assert verdict.status is VerdictStatus.NOT_EVALUATED
    assert verdict.reason.startswith("workload overhead-bound: GPU busy 20% of the FP32 step")
    assert verdict.measured == 10.0 / 9.0


def test_failed_mode_is_not_evaluated_with_its_error():
    verdicts = by_name(judge((mode("fp32"), mode("fp16", None, None, None, error="CUDA out of memory during warm-up: boom")), Thresholds(), "cuda", False, ""))
    for verdict in verdicts.values():
        assert verdict.status is VerdictStatus.NOT_EVALUATED
        assert "fp16 failed: CUDA out of memory during warm-up: boom" in verdict.reason


def test_missing_baseline_or_amp_mode_is_said():
    only_amp = judge((mode("bf16"),), Thresholds(), "cuda", None, "")
    assert {v.reason for v in only_amp} == {"the FP32 baseline was not run"}
    only_fp32 = judge((mode("fp32"),), Thresholds(), "cuda", None, "")
    assert {(v.mode, v.reason) for v in only_fp32} == {("amp", "no AMP mode was run")}


def test_configured_thresholds_are_used():
    verdicts = by_name(judge((mode("fp32", 30.0), mode("bf16", 10.0)), Thresholds(min_speedup=4.0), "cuda", False, ""))
    assert verdicts["speedup"].status is VerdictStatus.MISS
    assert verdicts["speedup"].target == 4.0


optional_ms = st.one_of(st.none(), st.floats(0.1, 1000))
optional_peak = st.one_of(st.none(), st.integers(1, 10**10))
optional_accuracy = st.one_of(st.none(), st.floats(0, 1))


@given(optional_ms, optional_peak, optional_accuracy, optional_ms, optional_peak, optional_accuracy, st.sampled_from(["cpu", "cuda"]), st.sampled_from([None, True, False]))
def test_an_unmeasured_figure_is_never_passed_or_missed(ms32, peak32, acc32, ms16, peak16, acc16, backend, overhead_bound):
    verdicts = judge((mode("fp32", ms32, peak32, acc32), mode("bf16", ms16, peak16, acc16)), Thresholds(), backend, overhead_bound, "")
    for verdict in verdicts:
        if verdict.status is not VerdictStatus.NOT_EVALUATED:
            assert verdict.measured is not None
        else:
            assert verdict.reason
        if backend == "cpu" and verdict.name != "accuracy_degradation":
            assert verdict.status is VerdictStatus.NOT_EVALUATED


def timed(name: str, samples: list[float], **figures) -> ModeResult:
    timing = summarize(samples)
    return ModeResult(name, name, step_time=timing, peak_memory_bytes=1000, accuracy=0.8, **figures)


def test_a_noisy_run_is_unstable_never_pass_or_miss():
    # IQR 177 ms on medians 107 ms apart: the spread exceeds the effect.
    fp32 = timed("fp32", [300.0, 420.0, 500.0, 600.0, 700.0])
    bf16 = timed("bf16", [200.0, 300.0, 393.0, 500.0, 520.0])
    for backend in ("cuda", "cpu"):
        speedup = by_name(judge((fp32, bf16), Thresholds(), backend, False, ""))["speedup"]
        assert speedup.status is VerdictStatus.UNSTABLE
        assert speedup.reason == (
            "unstable: spread exceeds the effect (IQR up to 200.00 ms against a 107.00 ms difference of medians); "
            "re-run on a quieter machine or with more --repeats"
        )


def test_an_interval_that_contains_the_target_is_unstable():
    fp32 = timed("fp32", [29.0, 30.0, 30.0, 30.0, 31.0])
    bf16 = timed("bf16", [18.0, 19.5, 20.0, 20.5, 22.0])
    speedup = by_name(judge((fp32, bf16), Thresholds(), "cuda", False, ""))["speedup"]
    assert speedup.status is VerdictStatus.UNSTABLE
    assert speedup.interval is not None and speedup.interval[0] < 1.5 <= speedup.interval[1]
    assert speedup.reason.startswith("unstable: the 95% interval ")


def test_a_steady_pass_states_its_interval():
    fp32 = timed("fp32", [30.0, 30.1, 30.2, 30.3, 30.4])
    bf16 = timed("bf16", [10.0, 10.1, 10.1, 10.2, 10.3])
    speedup = by_name(judge((fp32, bf16), Thresholds(), "cuda", False, ""))["speedup"]
    assert speedup.status is VerdictStatus.PASS
    low, high = speedup.interval
    assert 2.9 < low <= speedup.measured <= high < 3.1
    assert speedup.reason == f"2.99x (95% interval {low:.2f}x..{high:.2f}x) >= 1.5x"


def test_a_saturated_run_is_not_judged():
    accuracy = by_name(judge((mode("fp32", accuracy=1.0), mode("bf16", accuracy=0.9)), Thresholds(), "cuda", False, ""))["accuracy_degradation"]
    assert accuracy.status is VerdictStatus.NOT_EVALUATED
    assert accuracy.measured == 0.09999999999999998
    assert accuracy.reason == "not judged: fp32 is saturated (accuracy 1.0000 >= 0.99), so a precision loss cannot show"


def test_a_model_at_chance_is_not_judged():
    fp32 = ModeResult("fp32", "float32", step_time=StepTiming(10, 10, 10, 10, 10), accuracy=0.05, chance_accuracy=1 / 32)
    accuracy = by_name(judge((fp32, mode("bf16", accuracy=0.04)), Thresholds(), "cuda", False, ""))["accuracy_degradation"]
    assert accuracy.status is VerdictStatus.NOT_EVALUATED
    assert accuracy.reason == "not judged: FP32 is untrained (accuracy 0.0500 is below twice chance, 0.0625), so its accuracy is no reference"


def test_memory_is_judged_on_the_part_amp_can_change():
    def split(activations: int) -> MemorySplit:
        return MemorySplit(1000 + activations, 400, 400, 200, activations, estimated=False, method="test")

    fp32 = ModeResult("fp32", "float32", step_time=StepTiming(10, 10, 10, 10, 10), peak_memory_bytes=3000, memory_split=split(2000), accuracy=0.8)
    bf16 = ModeResult("bf16", "bfloat16", step_time=StepTiming(5, 5, 5, 5, 5), peak_memory_bytes=2000, memory_split=split(1000), accuracy=0.8)
    memory = by_name(judge((fp32, bf16), Thresholds(), "cuda", False, ""))["memory_reduction"]
    # The whole peak fell 33 % (a MISS); the activations AMP can change fell 50 %.
    assert (memory.status, memory.measured, memory.basis) == (VerdictStatus.PASS, 0.5, ACTIVATIONS_BASIS)
    assert memory.reason == f"50.0% >= 40% of {ACTIVATIONS_BASIS}"


def test_against_tf32_the_labels_say_so_and_the_basis_names_it():
    modes = (mode("fp32", 40.0), mode("tf32", 30.0), mode("bf16", 10.0))
    verdicts = by_name(judge(modes, Thresholds(), "cuda", False, "", baseline_mode="tf32"))
    assert verdicts["speedup"].label == "AMP speedup over TF32 (bf16)"
    assert verdicts["speedup"].measured == 3.0  # 30 / 10, not 40 / 10
    assert verdicts["speedup"].basis == SPEEDUP_BASES["tf32"]
    assert verdicts["memory_reduction"].label == "Peak-memory reduction vs TF32 (bf16)"
    assert [v.mode for v in judge(modes, Thresholds(), "cuda", False, "", baseline_mode="tf32")] == ["bf16"] * 3


def test_the_seed_band_is_the_lowest_and_highest_value():
    assert seed_band([0.02, -0.01, 0.005]) == (-0.01, 0.02)
    assert seed_band([0.3]) is None and seed_band([]) is None
    fp32 = seeded("fp32", [0.80, 0.82, 0.81])
    assert fp32.accuracy_band == (0.80, 0.82)
    assert ModeResult("fp32", "float32", accuracy=0.8).accuracy_band is None


def test_differences_are_paired_by_seed_and_skip_seeds_one_side_lacks():
    fp32 = ModeResult("fp32", "float32", accuracy_runs=(AccuracyRun(0, 0.80), AccuracyRun(1, 0.75), AccuracyRun(2, None, error="x")))
    bf16 = ModeResult("bf16", "bfloat16", accuracy_runs=(AccuracyRun(1, 0.70), AccuracyRun(0, 0.78), AccuracyRun(2, 0.5)))
    assert paired_differences(fp32, bf16) == pytest.approx([0.02, 0.05])


def accuracy_verdict(fp32: ModeResult, amp: ModeResult, target: float = 0.01):
    return by_name(judge((fp32, amp), Thresholds(max_accuracy_degradation=target), "cpu", None, ""))["accuracy_degradation"]


def test_every_seed_within_the_target_passes_with_its_band():
    verdict = accuracy_verdict(seeded("fp32", [0.81, 0.80, 0.82]), seeded("bf16", [0.805, 0.80, 0.815]))
    assert verdict.status is VerdictStatus.PASS
    assert verdict.measured == pytest.approx(0.01 / 3)
    assert verdict.band == pytest.approx((0.0, 0.005))
    assert verdict.reason == (
        "FP32 0.8100 - bf16 0.8067 = +0.0033 <= 0.01; per-seed differences +0.0000..+0.0050 over 3 seeds, "
        "every one within the target"
    )


def test_every_seed_beyond_the_target_misses():
    verdict = accuracy_verdict(seeded("fp32", [0.81, 0.80, 0.82]), seeded("fp16", [0.78, 0.77, 0.79]))
    assert verdict.status is VerdictStatus.MISS
    assert verdict.measured == pytest.approx(0.03)
    assert verdict.reason == (
        "FP32 0.8100 - fp16 0.7800 = +0.0300 > 0.01; per-seed differences +0.0300..+0.0300 over 3 seeds, "
        "every one beyond the target"
    )


def test_a_band_that_straddles_the_target_is_unstable_never_pass_or_miss():
    # Mean difference +0.0033 would pass, but one seed lost 0.02: the spread exceeds the effect.
    verdict = accuracy_verdict(seeded("fp32", [0.81, 0.80, 0.82]), seeded("bf16", [0.83, 0.78, 0.81]))
    assert verdict.status is VerdictStatus.UNSTABLE
    assert verdict.band == pytest.approx((-0.02, 0.02))
    assert verdict.reason == (
        "unstable: the per-seed differences -0.0200..+0.0200 over 3 seeds straddle the target 0.01 (mean +0.0033): "
        "the seed-to-seed spread exceeds the effect; re-run with more --accuracy-seeds, or a longer "
        "--accuracy-steps so both modes converge"
    )


def test_a_mean_beyond_the_target_with_one_seed_within_is_unstable_not_miss():
    verdict = accuracy_verdict(seeded("fp32", [0.81, 0.80, 0.82]), seeded("bf16", [0.75, 0.795, 0.76]))
    assert (verdict.status, verdict.measured, verdict.band) == (VerdictStatus.UNSTABLE, pytest.approx(0.125 / 3), pytest.approx((0.005, 0.06)))


def test_seeded_saturated_and_untrained_runs_are_not_judged():
    saturated = accuracy_verdict(seeded("fp32", [1.0, 0.995, 1.0]), seeded("bf16", [1.0, 1.0, 1.0]))
    assert (saturated.status, saturated.reason) == (
        VerdictStatus.NOT_EVALUATED,
        "not judged: fp32 is saturated (accuracy 0.9983 >= 0.99), so a precision loss cannot show",
    )
    at_chance = accuracy_verdict(seeded("fp32", [0.04, 0.05, 0.03]), seeded("bf16", [0.04, 0.05, 0.03]))
    assert at_chance.reason == (
        "not judged: FP32 is untrained (accuracy 0.0400 is below twice chance, 0.0625), so its accuracy is no reference"
    )
    stalled = seeded("fp32", [0.5, 0.6, 0.55])
    stalled = ModeResult(**{**stalled.__dict__, "accuracy_runs": (*stalled.accuracy_runs[:2], AccuracyRun(2, 0.55, 1.0, 3.4, 3.5))})
    verdict = accuracy_verdict(stalled, seeded("bf16", [0.5, 0.6, 0.55]))
    assert (verdict.status, verdict.reason) == (
        VerdictStatus.NOT_EVALUATED,
        "not judged: FP32 did not train (seed 2: loss 3.4000 -> 3.5000), so its accuracy is no reference",
    )


def seeded_with_chance(name: str, accuracies: list[float], chance: float) -> ModeResult:
    return ModeResult(**{**seeded(name, accuracies).__dict__, "chance_accuracy": chance})


def test_seeds_split_into_learned_and_not_are_judged_on_the_learned_ones():
    # Measured on an H200 (gpu preset, 200 steps): the copy task was learned in one seed and not
    # in the other, in every mode; the mean of the two is no reference.
    baseline = seeded_with_chance("fp32", [0.0001626, 0.8006105], 1 / 8192)
    edge = accuracy_verdict(baseline, seeded_with_chance("fp16", [0.0001341, 0.8006105], 1 / 8192))
    assert (edge.status, edge.band) == (VerdictStatus.NOT_EVALUATED, None)
    assert edge.reason == (
        "not judged: FP32 learned the task in 1 of 2 seeds (seed 0 0.000163 stayed below twice chance, 0.000244): "
        "the runs are at the edge of learning, so seeds differ by whether they learned, not by precision; "
        "re-run with a longer --accuracy-steps"
    )
    # Two seeds learned of three: judged on those two, and the verdict says which were left out.
    judged = accuracy_verdict(seeded("fp32", [0.01, 0.80, 0.81]), seeded("bf16", [0.30, 0.795, 0.805]))
    assert (judged.status, judged.band) == (VerdictStatus.PASS, pytest.approx((0.005, 0.005)))
    assert judged.reason == (
        "FP32 0.5400 - bf16 0.6333 = -0.0933 (mean of every seed; judged on the 2 seeds FP32 learned, leaving out "
        "seed 0 0.0100, below twice chance) <= 0.01; per-seed differences +0.0050..+0.0050 over 2 seeds, every one "
        "within the target"
    )


def test_one_run_has_no_band_and_is_never_judged():
    # The step form: the timed run's own accuracy, a large drop included.
    fp32 = ModeResult("fp32", "float32", accuracy=0.80, chance_accuracy=0.25, train_loss_first=1.4, train_loss_last=0.6)
    for amp_accuracy in (0.80, 0.40):
        verdict = accuracy_verdict(fp32, ModeResult("bf16", "bfloat16", accuracy=amp_accuracy))
        assert verdict.status is VerdictStatus.NOT_EVALUATED
        assert verdict.band is None
        assert verdict.measured == pytest.approx(0.80 - amp_accuracy)
    assert verdict.reason == (
        "not judged: one run, no band (FP32 0.8000 - bf16 0.4000 = +0.4000): without several seeds the run-to-run "
        "spread is unknown, so the difference cannot be told from noise (seeded runs need the components form or "
        "the reference, and --accuracy-seeds 2 or more)"
    )
    one_seed = accuracy_verdict(seeded("fp32", [0.8]), seeded("bf16", [0.8]))
    assert one_seed.status is VerdictStatus.NOT_EVALUATED and one_seed.reason.startswith("not judged: one run, no band")


def test_a_failed_seed_leaves_the_accuracy_unjudged_with_the_failure():
    bf16 = seeded("bf16", [0.8, 0.8])
    bf16 = ModeResult(**{**bf16.__dict__, "accuracy_runs": (bf16.accuracy_runs[0], AccuracyRun(1, error="loss became NaN or infinite during the accuracy run"))})
    verdict = accuracy_verdict(seeded("fp32", [0.8, 0.8]), bf16)
    assert (verdict.status, verdict.reason) == (
        VerdictStatus.NOT_EVALUATED,
        "accuracy not measured for every seed: bf16 seed 1 failed: loss became NaN or infinite during the accuracy run",
    )


def test_every_seed_failing_says_so_rather_than_no_accuracy():
    nan = "loss became NaN or infinite during the accuracy run"
    bf16 = ModeResult("bf16", "bfloat16", accuracy=None, accuracy_runs=(AccuracyRun(0, error=nan), AccuracyRun(1, error=nan)))
    verdict = accuracy_verdict(seeded("fp32", [0.8, 0.8]), bf16)
    assert (verdict.status, verdict.measured) == (VerdictStatus.NOT_EVALUATED, None)
    assert verdict.reason == f"accuracy not measured for every seed: bf16 seed 0 failed: {nan}"
