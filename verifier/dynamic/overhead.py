"""Tells a compute-bound workload from an overhead-bound one (GPU only).

AMP speeds up the math; when the GPU idles between small kernels, waiting for Python and
kernel launches, there is little math to speed up and a missed speedup target says nothing
about AMP. The probe profiles a few FP32 steps and compares summed kernel time with the
wall time of the same steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from verifier.dynamic.timing import time_span

BUSY_THRESHOLD = 0.5
"""Below this fraction of the FP32 step spent in kernels, the workload is overhead-bound."""

METHOD = (
    "torch.profiler over a separate pass of sync-steps FP32 steps: summed CUDA kernel and copy "
    f"time / CUDA-event wall time; below {BUSY_THRESHOLD:.0%} busy counts as overhead-bound"
)


@dataclass(frozen=True)
class BusyProbe:
    busy_fraction: float | None
    note: str

    @property
    def overhead_bound(self) -> bool | None:
        return None if self.busy_fraction is None else self.busy_fraction < BUSY_THRESHOLD


def probe_device_busy(run_steps: Callable[[], Any], device: torch.device) -> BusyProbe:
    """Run `run_steps()` once under the profiler (CUDA only). Errors from the steps
    propagate; errors from the profiler only lose the probe, its API being fragile."""
    if device.type != "cuda":
        raise ValueError("the busy-time probe needs a CUDA device")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    try:
        profiler = torch.profiler.profile(activities=activities)
        profiler.__enter__()
    except Exception as error:  # noqa: BLE001
        run_steps()
        return BusyProbe(None, f"probe failed: {type(error).__name__}: {error}")
    try:
        span_ms = time_span(run_steps, device)
    finally:
        profiler.__exit__(None, None, None)
    try:
        device_us = sum(
            getattr(event, "self_device_time_total", 0.0)
            for event in profiler.key_averages()
            if getattr(event, "device_type", None) == torch.autograd.DeviceType.CUDA
        )
    except Exception as error:  # noqa: BLE001
        return BusyProbe(None, f"probe failed: {type(error).__name__}: {error}")
    return busy_from_times(device_us / 1000.0, span_ms)


def busy_from_times(device_ms: float, span_ms: float) -> BusyProbe:
    if span_ms <= 0 or device_ms <= 0:
        return BusyProbe(None, "probe saw no device activity")
    busy = min(1.0, device_ms / span_ms)
    kind = "overhead-bound" if busy < BUSY_THRESHOLD else "compute-bound"
    return BusyProbe(busy, f"GPU busy {busy:.0%} of the step ({kind})")
