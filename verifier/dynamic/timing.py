"""Step timing: CUDA events on a GPU (device time, no per-step sync), perf_counter on CPU.

Each repeat times `steps` consecutive steps as one span, so nothing inside the span waits
for the device; the span is closed by waiting on the end event only.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from verifier.dynamic.results import StepTiming


def timer_kind(device: torch.device) -> str:
    return "cuda-events" if device.type == "cuda" else "perf_counter"


def time_span(
    run_steps: Callable[[], Any], device: torch.device, clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Milliseconds that `run_steps()` took on `device`: CUDA events on a GPU, `clock` on CPU."""
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run_steps()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    started = clock()
    run_steps()
    return (clock() - started) * 1000.0


def summarize(samples_ms: list[float]) -> StepTiming:
    """Median and quartiles across repeats (inclusive method: exact for small samples)."""
    if not samples_ms:
        raise ValueError("no timing samples")
    if len(samples_ms) == 1:
        q1 = q3 = samples_ms[0]
    else:
        q1, _, q3 = statistics.quantiles(samples_ms, n=4, method="inclusive")
    return StepTiming(
        median_ms=statistics.median(samples_ms),
        q1_ms=q1,
        q3_ms=q3,
        min_ms=min(samples_ms),
        max_ms=max(samples_ms),
        samples_ms=tuple(samples_ms),
    )

