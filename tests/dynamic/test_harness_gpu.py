"""On a CUDA device the harness times with events, measures allocator peaks and judges targets."""

from __future__ import annotations

import pytest
import torch

from verifier.dynamic.harness import HarnessOptions, run_harness
from verifier.dynamic.memory import CUDA_INTERLEAVED_METHOD
from verifier.dynamic.results import VerdictStatus
from verifier.dynamic.verdicts import CPU_REASON

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_tiny_preset_on_cuda_is_measured_and_judged():
    result = run_harness(HarnessOptions(
        preset="tiny", device="cuda", warmup=10, steps=5, repeats=3, max_repeats=3, sync_steps=2, time_budget_s=120,
    ))
    assert result.method.timer == "cuda-events"
    assert result.device.backend == "cuda"
    assert [m.mode for m in result.modes] == ["fp32", "tf32", "fp16", "bf16"]
    assert result.fp32_baseline in ("fp32", "tf32")
    for mode in result.modes:
        assert mode.error is None, mode.error
        assert mode.peak_memory_bytes and mode.peak_memory_bytes > 0
        assert mode.memory_method == CUDA_INTERLEAVED_METHOD
        split = mode.memory_split
        assert split is not None and not split.estimated and split.peak_bytes == mode.peak_memory_bytes
        assert mode.user_syncs_per_step == 0.0
    assert result.mode("fp32").device_busy_fraction is not None
    assert result.overhead_bound is not None
    for verdict in result.verdicts:
        assert verdict.reason != CPU_REASON
        if verdict.status is not VerdictStatus.NOT_EVALUATED:
            assert verdict.measured is not None


def test_bf16_mfu_is_reported_or_explained():
    result = run_harness(HarnessOptions(
        preset="tiny", device="cuda", modes=("bf16",), warmup=5, steps=5, repeats=2, max_repeats=2, sync_steps=1, time_budget_s=120,
    ))
    bf16 = result.mode("bf16")
    assert bf16.achieved_tflops and bf16.achieved_tflops > 0
    assert (bf16.mfu is not None) or bf16.mfu_note


def test_the_reference_is_judged_against_tf32_and_strict_fp32_is_timed_only():
    result = run_harness(HarnessOptions(
        preset="tiny", device="cuda", modes=("fp32", "tf32", "bf16"), warmup=5, steps=5, repeats=2, max_repeats=2,
        sync_steps=1, accuracy_seeds=2, accuracy_steps=20, time_budget_s=120,
    ))
    assert result.fp32_baseline == "tf32"
    strict = result.mode("fp32")
    assert strict.accuracy_runs == ()
    assert strict.accuracy_note.startswith("timed only: strict FP32 is not the accuracy baseline (tf32 is)")
    assert [run.seed for run in result.mode("tf32").accuracy_runs] == [0, 1]
    assert [run.seed for run in result.mode("bf16").accuracy_runs] == [0, 1]
    assert {v.label for v in result.verdicts} >= {"AMP speedup over TF32 (bf16)", "Accuracy degradation vs TF32 (bf16)"}
    # The reference's fused AdamW reads nothing back: no library sync sites on CUDA.
    assert all(mode.library_sync_sites == () for mode in result.modes)


def test_a_small_budget_bounds_the_whole_gpu_run():
    result = run_harness(HarnessOptions(preset="tiny", device="cuda", time_budget_s=10))
    assert result.method.elapsed_s <= 10 or any(cut.startswith("over budget") for cut in result.method.budget_cuts)
    assert all(mode.step_time is not None for mode in result.modes)
