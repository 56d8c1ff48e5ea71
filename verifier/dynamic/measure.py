"""Measures one precision mode of a workload: warm-up, timed repeats with peak memory and
NVML sampling, an untimed sync-counting pass, on CUDA a busy-time probe, then evaluation.

Each phase records its figures as soon as it has them, so a failure later on keeps what
was already measured; every failure becomes the mode's `error`, never a traceback.
"""

from __future__ import annotations

import gc
import hashlib
import math
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from verifier.dynamic import overhead
from verifier.dynamic.entry import EntryError, describe_exception
from verifier.dynamic.flops import model_flop_utilisation
from verifier.dynamic.memory import PeakMemoryProbe, measured_split
from verifier.dynamic.nvml import Nvml, NvmlSample, UtilizationSampler
from verifier.dynamic.results import DeviceFacts, ModeResult
from verifier.dynamic.sync_counter import CudaSyncDebugWarnings, HostDataTags, LineTrace, SyncCounter
from verifier.dynamic.timing import summarize, time_span
from verifier.dynamic.workload import ModeRun, WorkloadSource
from verifier.reference_impl.train import AUTOCAST_DTYPES

ProgressCallback = Callable[[str, str, int, int], None]
"""progress(mode, phase, steps_done, steps_total), called between phases and repeats."""


@dataclass(frozen=True)
class StepCounts:
    warmup: int
    steps: int
    repeats: int
    sync_steps: int

    def total(self, device: torch.device) -> int:
        """Steps each mode trains; on CUDA a busy-time probe repeats the sync-counting count."""
        probe = self.sync_steps if device.type == "cuda" else 0
        return self.warmup + self.steps * self.repeats + self.sync_steps + probe


class _NonFiniteLoss(Exception):
    pass


class _LossTracker:
    """Sums step losses on the device; `take_mean()` is the one host read per phase."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.total = torch.zeros((), device=device, dtype=torch.float64)
        self.count = 0

    def add(self, loss: Any) -> None:
        if isinstance(loss, torch.Tensor):
            self.total += loss.detach().to(self.device, torch.float64).sum()
            self.count += 1
        elif isinstance(loss, (int, float)):
            self.total += float(loss)
            self.count += 1

    def take_mean(self, phase: str) -> float | None:
        if self.count == 0:
            return None
        mean = self.total.item() / self.count
        self.total.zero_()
        self.count = 0
        if not math.isfinite(mean):
            raise _NonFiniteLoss(f"loss became NaN or infinite during {phase}")
        return mean


def _bf16_unsupported(device: torch.device) -> bool:
    if device.type != "cuda":
        return False
    try:
        return not torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:
        return not torch.cuda.is_bf16_supported()


def measure_mode(
    workload: WorkloadSource,
    mode: str,
    device: torch.device,
    facts: DeviceFacts,
    counts: StepCounts,
    seed: int,
    nvml: Nvml | None,
    handle: Any,
    report: ProgressCallback,
) -> tuple[ModeResult, list[NvmlSample]]:
    figures: dict[str, Any] = {
        "mode": mode,
        "dtype": str(AUTOCAST_DTYPES[mode]).removeprefix("torch."),
        "grad_scaler": mode == "fp16",
    }
    if mode == "bf16" and _bf16_unsupported(device):
        return ModeResult(**figures, error="bf16 is not supported on this GPU"), []
    measurement = _ModeMeasurement(mode, device, facts, counts, UtilizationSampler(nvml, handle), report, figures)
    run: ModeRun | None = None
    error: str | None = None
    try:
        measurement.progress("setup", 0)
        with HostDataTags() if device.type != "cuda" else nullcontext():
            run = workload.open(mode, device, seed)
        parts = run.memory_parts() if hasattr(run, "memory_parts") else None
        if parts is not None:
            figures["weights_fingerprint"] = state_fingerprint(parts[0])
        if device.type != "cuda":
            estimate = getattr(workload, "estimate_memory", None)
            split = estimate(mode) if estimate is not None else "not estimated: the workload cannot be traced"
            if isinstance(split, str):
                figures["memory_split_note"] = split
            else:
                figures["memory_split"] = split
        measurement.measure(run)
    except _NonFiniteLoss as failure:
        error = str(failure)
    except torch.cuda.OutOfMemoryError as failure:
        error = f"CUDA out of memory during {measurement.phase}: {_first_line(failure)}"
    except EntryError as failure:
        error = str(failure)
    except KeyboardInterrupt:
        raise
    except BaseException as failure:  # noqa: BLE001 - SystemExit from user code too is report content
        error = f"{measurement.phase} raised {describe_exception(failure)}"
    finally:
        measurement.sampler.stop()
        if run is not None:
            _close_quietly(run)
        run = None
        _release_memory(device)
    return ModeResult(**figures, error=error), measurement.sampler.samples


@dataclass
class _ModeMeasurement:
    """The phases of one mode, in order; each phase writes its figures as soon as it has
    them, so a failure later on keeps what was already measured."""

    mode: str
    device: torch.device
    facts: DeviceFacts
    counts: StepCounts
    sampler: UtilizationSampler
    report: ProgressCallback
    figures: dict[str, Any]
    phase: str = "setup"
    done: int = 0

    def progress(self, phase: str, steps: int) -> None:
        """Count `steps` more steps done and tell the progress callback."""
        self.done += steps
        self.report(self.mode, phase, self.done, self.counts.total(self.device))

    def measure(self, run: ModeRun) -> None:
        tracker = _LossTracker(self.device)

        def run_steps(count: int) -> None:
            for _ in range(count):
                tracker.add(run.step())

        self.phase = "warm-up"
        run_steps(self.counts.warmup)
        self.figures["train_loss_first"] = tracker.take_mean(self.phase)
        self.progress(self.phase, self.counts.warmup)

        self.phase = "timed steps"
        self._time(run, run_steps, tracker)

        self.phase = "sync counting"
        counting_step = getattr(run, "counting_step", run.step)

        def count_steps(count: int) -> None:
            for _ in range(count):
                tracker.add(counting_step())

        self._count_syncs(count_steps)
        tracker.take_mean(self.phase)
        self.progress(self.phase, self.counts.sync_steps)

        if self.device.type == "cuda":
            # Profiled apart from the counter, whose Python hooks would inflate host time.
            self.phase = "busy-time probe"
            busy = overhead.probe_device_busy(lambda: run_steps(self.counts.sync_steps), self.device)
            self.figures["device_busy_fraction"] = busy.busy_fraction
            tracker.take_mean(self.phase)
            self.progress(self.phase, self.counts.sync_steps)

        self.phase = "evaluation"
        self.figures["chance_accuracy"] = getattr(run, "chance_accuracy", None)
        self.figures["eval_loss"], self.figures["accuracy"] = run.evaluate()
        self.progress("done", 0)

    def _time(self, run: ModeRun, run_steps: Callable[[int], None], tracker: _LossTracker) -> None:
        probe = PeakMemoryProbe(self.device)
        samples_ms = []
        probe.start()
        with self.sampler:
            for repeat in range(self.counts.repeats):
                samples_ms.append(time_span(lambda: run_steps(self.counts.steps), self.device) / self.counts.steps)
                self.figures["train_loss_last"] = tracker.take_mean(f"timed repeat {repeat + 1}")
                self.progress(self.phase, self.counts.steps)
        reading = probe.stop()
        parts = run.memory_parts() if hasattr(run, "memory_parts") else None
        if reading.peak_bytes is not None and parts is not None:
            self.figures["memory_split"] = measured_split(reading.peak_bytes, *parts)
        elif reading.peak_bytes is not None:
            self.figures["memory_split_note"] = "not split: the step form names no model and optimizer"
        timing = summarize(samples_ms)
        utilisation = model_flop_utilisation(run.flops_per_step, timing.median_ms, self.mode, self.facts.backend, self.facts.name)
        self.figures.update(
            step_time=timing,
            tokens_per_second=run.tokens_per_step / (timing.median_ms / 1000.0) if run.tokens_per_step else None,
            peak_memory_bytes=reading.peak_bytes,
            memory_method=reading.method,
            process_rss_peak_bytes=reading.process_rss_peak_bytes,
            utilization=self.sampler.summary(),
            flops_per_step=run.flops_per_step,
            achieved_tflops=utilisation.achieved_tflops,
            mfu=utilisation.mfu,
            mfu_note=utilisation.note,
        )

    def _count_syncs(self, run_steps: Callable[[int], None]) -> None:
        self.figures["sync_method"] = _sync_method(self.device)
        with SyncCounter(simulated=self.device.type != "cuda") as counter, CudaSyncDebugWarnings() as flagged:
            with LineTrace() as trace:
                run_steps(self.counts.sync_steps)
        summary = counter.summary(self.counts.sync_steps)
        flagged_per_step = None if flagged.count is None else flagged.count / self.counts.sync_steps
        self.figures.update(
            user_syncs_per_step=summary.user_per_step,
            library_syncs_per_step=summary.library_per_step,
            sync_sites=summary.user_sites,
            device_flagged_syncs_per_step=flagged_per_step,
            executed_lines=trace.executed(),
        )


def _sync_method(device: torch.device) -> str:
    text = (
        "TorchFunctionMode and TorchDispatchMode over the sync-counting steps (untimed, eager model): "
        "reads of device tensors (item, tolist, numpy, cpu, bool/float/int/index/format/repr, x in t, equal), "
        "operators with data-dependent outputs (nonzero, boolean masks, unique, bincount, repeat_interleave, "
        "one_hot without num_classes), blocking host-to-device copies, torch.cuda.synchronize, also in "
        "backward hooks and custom backward; charged to the first frame in user code (torch, the standard "
        "library and installed packages skipped)"
    )
    if device.type == "cuda":
        return text + '; plus torch.cuda.set_sync_debug_mode("warn") warnings'
    return text + (
        "; on CPU nothing is on an accelerator, so this counts what would sync on one: every tensor except "
        "host data (factories without device=, .cpu(), .to(\"cpu\"), and what is computed only from them)"
    )


def state_fingerprint(model: torch.nn.Module) -> str:
    """sha256 over the state_dict's names, dtypes, shapes and bytes."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _close_quietly(run: ModeRun) -> None:
    try:
        run.close()
    except Exception:  # noqa: BLE001, S110 - closing a failed run must not hide its error
        pass


def _release_memory(device: torch.device) -> None:
    """Once per mode: each mode starts with only its own tensors alive and an empty cache,
    so NVML's memory-used samples and a later OOM belong to that mode alone."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()  # verify-perf: ignore[VP403]
