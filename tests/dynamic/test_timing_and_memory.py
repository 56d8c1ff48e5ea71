"""Timers and memory probes: exact statistics, honest CPU memory reporting."""

from __future__ import annotations

import time

import torch

from verifier.dynamic.memory import CPU_METHOD, PeakMemoryProbe
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


def test_cpu_memory_is_not_reported_as_a_tensor_peak():
    probe = PeakMemoryProbe(torch.device("cpu"))
    probe.start()
    block = torch.ones(4_000_000)  # 16 MB of resident memory
    reading = probe.stop()
    del block
    assert reading.peak_bytes is None
    assert reading.method.startswith(CPU_METHOD)
    assert "not a tensor peak" in reading.method
    assert reading.process_rss_peak_bytes is not None
    assert reading.process_rss_peak_bytes > 16_000_000
