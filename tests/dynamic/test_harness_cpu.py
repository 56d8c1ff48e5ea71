"""The harness on CPU: real numbers for every mode, speed and memory honestly not judged."""

from __future__ import annotations

import json
import math

import pytest

from verifier.dynamic.harness import HarnessOptions, HarnessUsageError, resolve_modes, run_harness
from verifier.dynamic.results import VerdictStatus
from verifier.dynamic.verdicts import ACTIVATIONS_BASIS, CPU_REASON

SMALL = {"warmup": 4, "steps": 3, "repeats": 2, "max_repeats": 2, "sync_steps": 2}


@pytest.fixture(scope="module")
def cpu_result(tmp_path_factory):
    chart = tmp_path_factory.mktemp("chart") / "bench.png"
    progress: list[tuple[str, str, int, int]] = []
    result = run_harness(
        # A budget no machine runs out of: this checks the figures, test_budget the cuts.
        HarnessOptions(preset="tiny", modes=("fp32", "bf16"), device="cpu", chart_path=str(chart), time_budget_s=600, **SMALL),
        progress=lambda *event: progress.append(event),
    )
    return result, progress


def test_every_mode_has_real_figures(cpu_result):
    result, _ = cpu_result
    assert [m.mode for m in result.modes] == ["fp32", "bf16"]
    for mode in result.modes:
        assert mode.error is None
        assert mode.step_time.median_ms > 0
        assert len(mode.step_time.samples_ms) == 2
        assert mode.tokens_per_second == pytest.approx(1024 / (mode.step_time.median_ms / 1000))
        assert math.isfinite(mode.eval_loss)
        assert 0.0 <= mode.accuracy <= 1.0
        assert mode.peak_memory_bytes is None
        assert mode.process_rss_peak_bytes > 0
        assert mode.achieved_tflops > 0 and mode.mfu is None


def test_reference_step_has_no_host_syncs(cpu_result):
    result, _ = cpu_result
    for mode in result.modes:
        assert (mode.user_syncs_per_step, mode.library_syncs_per_step, mode.sync_sites) == (0.0, 0.0, ())


def test_speed_and_memory_are_not_evaluated_on_cpu(cpu_result):
    result, _ = cpu_result
    verdicts = {v.name: v for v in result.verdicts}
    # A CPU ratio is shown, never judged: not evaluated, or unstable when the spread hides it.
    speedup = verdicts["speedup"]
    assert (speedup.status, speedup.reason) == (VerdictStatus.NOT_EVALUATED, CPU_REASON) or (
        speedup.status is VerdictStatus.UNSTABLE and speedup.reason.startswith("unstable: ")
    )
    memory = verdicts["memory_reduction"]
    assert (memory.status, memory.measured, memory.basis) == (VerdictStatus.NOT_EVALUATED, None, ACTIVATIONS_BASIS)
    assert memory.reason.startswith(CPU_REASON + "; PyTorch's memory tracker under FakeTensorMode estimates ")
    assert memory.reason.endswith("% less activation memory (an estimate, never judged)")
    assert all(m.memory_split is not None and m.memory_split.estimated for m in result.modes)
    assert result.overhead_bound is None


def test_tiny_reaches_a_clearly_non_saturated_accuracy_at_the_fixed_length(cpu_result):
    # 3 seeds x 60 steps per mode, apart from the (deliberately short) timed run: the task's
    # ceiling is 1 - 0.2 + 0.2 / 32 = 0.80625, far above twice chance (0.0625) and below 0.99.
    result, _ = cpu_result
    assert (result.method.accuracy_steps, result.method.accuracy_seeds) == (60, (0, 1, 2))
    for mode in result.modes:
        assert [run.seed for run in mode.accuracy_runs] == [0, 1, 2]
        for run in mode.accuracy_runs:
            assert run.error is None
            assert 0.78 < run.accuracy < 0.83
            assert run.train_loss_last < 0.5 * run.train_loss_first
        assert mode.accuracy == pytest.approx(sum(run.accuracy for run in mode.accuracy_runs) / 3)
        assert mode.accuracy_note == "mean of 3 seeded runs of 60 steps each (seeds 0, 1, 2)"
    accuracy = {v.name: v for v in result.verdicts}["accuracy_degradation"]
    assert accuracy.status is VerdictStatus.PASS
    assert accuracy.band is not None and -0.01 <= accuracy.band[0] <= accuracy.band[1] <= 0.01
    assert accuracy.reason.startswith("FP32 ")
    assert accuracy.reason.endswith("over 3 seeds, every one within the target")


def test_method_and_device_are_described(cpu_result):
    result, _ = cpu_result
    assert (result.method.timer, result.method.warmup_steps, result.method.repeats) == ("perf_counter", 4, 2)
    assert result.device.backend == "cpu"
    assert result.device.cpu_threads == 1  # the tiny preset's cap
    assert result.workload.name == "tiny" and result.workload.parameters == 26944


def test_same_seed_means_same_starting_loss(cpu_result):
    result, _ = cpu_result
    fp32, bf16 = result.modes
    assert bf16.train_loss_first == pytest.approx(fp32.train_loss_first, abs=0.05)


def test_chart_written_and_json_ready(cpu_result):
    result, _ = cpu_result
    with open(result.chart_path, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    json.dumps(result.to_dict())


def test_progress_reports_each_phase(cpu_result):
    _, progress = cpu_result
    fp32 = [(phase, done) for mode, phase, done, total in progress if mode == "fp32"]
    assert fp32 == [
        ("setup", 0), ("warm-up", 4), ("timed steps", 7), ("timed steps", 10), ("sync counting", 12), ("done", 12),
        ("accuracy, seed 0", 60), ("accuracy, seed 1", 120), ("accuracy, seed 2", 180),
    ]


def test_bad_options_are_usage_errors():
    with pytest.raises(HarnessUsageError, match="unknown mode"):
        resolve_modes(("fp8",), __import__("torch").device("cpu"))
    with pytest.raises(HarnessUsageError, match="unknown preset"):
        run_harness(HarnessOptions(preset="huge", device="cpu"))
    with pytest.raises(HarnessUsageError, match="at least 1"):
        run_harness(HarnessOptions(preset="tiny", device="cpu", repeats=0))
