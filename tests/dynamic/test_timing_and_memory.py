"""Timers and memory probes: exact statistics, honest CPU memory reporting."""

from __future__ import annotations

import time

import torch

from verifier.dynamic.memory import CPU_METHOD, rss_high_water
from verifier.dynamic.timing import summarize, time_span, timer_kind


def test_summary_uses_median_and_inclusive_quartiles():
    timing = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (timing.median_ms, timing.q1_ms, timing.q3_ms, timing.min_ms, timing.max_ms) == (3.0, 2.0, 4.0, 1.0, 5.0)
    assert timing.iqr_ms == 2.0
    assert timing.samples_ms == (5.0, 1.0, 3.0, 2.0, 4.0)


def test_a_single_sample_has_no_spread():
    timing = summarize([7.5])
    assert (timing.median_ms, timing.iqr_ms) == (7.5, 0.0)


def test_cpu_span_measures_wall_time():
    elapsed = time_span(lambda: time.sleep(0.02), torch.device("cpu"))
    assert 20.0 <= elapsed < 200.0


def test_timer_kind_names_the_clock():
    assert timer_kind(torch.device("cpu")) == "perf_counter"
    assert timer_kind(torch.device("cuda")) == "cuda-events"


def test_cpu_memory_is_not_reported_as_a_tensor_peak(entry_fixtures):
    from verifier.dynamic.harness import HarnessOptions, run_harness

    block = torch.ones(4_000_000)  # 16 MB of resident memory
    assert rss_high_water() > 16_000_000
    del block
    result = run_harness(HarnessOptions(entry="entry_points:components", device="cpu", modes=("fp32",),
                                        warmup=1, steps=1, repeats=2, max_repeats=2, sync_steps=1, threads=1))
    fp32 = result.mode("fp32")
    assert fp32.peak_memory_bytes is None
    assert fp32.memory_method == CPU_METHOD + "; modes are interleaved, so it covers all of them"
    assert "not a tensor peak" in fp32.memory_method
    assert fp32.process_rss_peak_bytes > 16_000_000
