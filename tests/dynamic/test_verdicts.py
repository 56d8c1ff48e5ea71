"""Verdicts: PASS/MISS only from measured values; everything else NOT_EVALUATED with a reason."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from verifier.dynamic.results import MemorySplit, ModeResult, StepTiming, Thresholds, VerdictStatus
from verifier.dynamic.timing import summarize
from verifier.dynamic.verdicts import ACTIVATIONS_BASIS, CPU_REASON, SPEEDUP_BASES, judge


def mode(name: str, ms: float | None = 10.0, peak: int | None = 1000, accuracy: float | None = 0.9, error: str | None = None) -> ModeResult:
    timing = StepTiming(ms, ms, ms, ms, ms) if ms is not None else None
    return ModeResult(name, name, step_time=timing, peak_memory_bytes=peak, accuracy=accuracy, error=error)


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
    assert verdicts["accuracy_degradation"].status is VerdictStatus.PASS
    assert CPU_REASON == "not evaluated on CPU: speed and memory targets are judged on a CUDA device"


def test_cuda_targets_pass_and_miss_on_measured_values():
    passing = by_name(judge((mode("fp32", 30.0, 1000, 0.90), mode("bf16", 10.0, 500, 0.895)), Thresholds(), "cuda", False, "GPU busy 95% of the FP32 step"))
    assert [passing[n].status for n in ("speedup", "memory_reduction", "accuracy_degradation")] == [VerdictStatus.PASS] * 3
    assert passing["speedup"].measured == 3.0
    assert passing["memory_reduction"].measured == 0.5
    assert passing["speedup"].reason == "3.00x >= 1.5x"

    missing = by_name(judge((mode("fp32", 12.0, 1000, 0.90), mode("fp16", 10.0, 900, 0.85)), Thresholds(), "cuda", False, "GPU busy 95% of the FP32 step"))
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
