"""What the dynamic harness measured: the contract between the harness and the reports.

Every class is a frozen dataclass and `to_dict()` gives a JSON-ready dict with stable keys
(`SCHEMA_VERSION` bumps when a key changes meaning or disappears). A figure that was not
measured is `None` and, where it matters, a sibling field says why; renderers must show
`None` as "not measured", never as zero or as passed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any

from verifier.dynamic.intervals import seed_band

SCHEMA_VERSION = 2
"""2: `accuracy` and `eval_loss` are the mean over the seeded accuracy runs when there are any."""

MODES = ("fp32", "tf32", "fp16", "bf16")
"""Precision modes in display order: the FP32 baselines first (strict, then with TF32 tensor-core
matmuls, CUDA only), then the AMP modes."""
FP32_MODES = ("fp32", "tf32")


class VerdictStatus(str, enum.Enum):
    """PASS and MISS need a measured value; NOT_EVALUATED always carries a reason."""

    PASS = "PASS"
    MISS = "MISS"
    NOT_EVALUATED = "NOT_EVALUATED"
    # Measured, but the spread is larger than the effect: never passes, never misses.
    UNSTABLE = "UNSTABLE"


@dataclass(frozen=True)
class UtilizationSummary:
    """NVML samples taken by a background thread while the timed steps ran.

    Fields are None when the driver does not report that counter (e.g. power on some
    boards). `samples` is how many readings the means and maxima are computed from.
    """

    samples: int
    interval_s: float
    gpu_util_percent_mean: float | None = None
    gpu_util_percent_max: float | None = None
    memory_util_percent_mean: float | None = None
    memory_used_bytes_max: int | None = None
    power_watts_mean: float | None = None
    power_watts_max: float | None = None
    sm_clock_mhz_mean: float | None = None


@dataclass(frozen=True)
class ClockFacts:
    """Clocks read once from NVML (MHz): current and maximum SM and memory clocks."""

    sm_mhz: int | None = None
    sm_max_mhz: int | None = None
    memory_mhz: int | None = None
    memory_max_mhz: int | None = None


@dataclass(frozen=True)
class DeviceFacts:
    """The machine the figures come from.

    backend: "cuda" or "cpu"; speed and memory targets are judged on "cuda" only.
    name: GPU name (NVML or torch) or the CPU model / platform string.
    driver: NVIDIA driver version, None on CPU or without NVML.
    total_memory_bytes: device memory (GPU) or physical memory (CPU), None if unknown.
    torch_version / cuda_version: the runtime used; cuda_version is None on CPU builds.
    compute_capability: "9.0" style string on CUDA, None on CPU.
    multiprocessors: streaming multiprocessors visible to torch (fewer than the board's on MIG).
    cpu_threads: torch intra-op threads used for the run.
    nvml: "available" or the reason NVML facts are missing (e.g. "no NVIDIA driver").
    clocks: NVML clock readings, None without NVML.
    utilization: sampled during the timed steps of all modes, None without NVML.
    """

    backend: str
    name: str
    driver: str | None = None
    total_memory_bytes: int | None = None
    torch_version: str = ""
    cuda_version: str | None = None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    cpu_threads: int | None = None
    nvml: str = "not queried"
    clocks: ClockFacts | None = None
    utilization: UtilizationSummary | None = None


@dataclass(frozen=True)
class StepTiming:
    """Time per training step in milliseconds, from `repeats` timed runs of `steps` steps.

    Each sample is one repeat's total time divided by its step count, so a sample already
    averages over steps; the median and spread are taken across repeats. The interquartile
    range (q1..q3) is the spread to print; min/max are kept for baselines.
    """

    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    samples_ms: tuple[float, ...] = ()

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms


@dataclass(frozen=True)
class SyncSite:
    """One place in user code that forced host-device syncs while counting.

    location: "path:line" of the first frame outside torch; kind: the operation seen
    ("item", "__bool__", "cuda.synchronize", ...); count: over all counted steps.
    For a sync a library made itself (ModeResult.library_sync_sites): call, the library call at
    that line ("AdamW.step"); operation, what the library did ("reads the per-parameter step
    counter (state['step'].item())"); library ("torch.optim"); on_cuda, whether it is a device
    sync on CUDA (None: not known from a CPU count); cuda_note, why and how to avoid it.
    """

    location: str
    kind: str
    count: int
    call: str = ""
    operation: str = ""
    library: str = ""
    on_cuda: bool | None = None
    cuda_note: str = ""


@dataclass(frozen=True)
class MemorySplit:
    """The peak split into what AMP cannot change and what it can.

    parameters, gradients (one per trainable parameter, in its dtype) and optimizer state
    are counted from the tensors themselves; activations_other is the rest of the peak
    (activations, temporaries, autocast's low-precision weight copies). estimated: True when
    the figures come from PyTorch's memory tracker under FakeTensorMode (no real memory: CPU
    runs); an estimate is never judged. method says which.
    """

    peak_bytes: int
    parameters_bytes: int
    gradients_bytes: int
    optimizer_state_bytes: int
    activations_other_bytes: int
    estimated: bool
    method: str


@dataclass(frozen=True)
class AccuracyRun:
    """One seeded accuracy run of a mode: a fresh run (new weights from `seed`) trained for the
    fixed `Method.accuracy_steps`, untimed, then evaluated on held-out batches.

    train_loss_first / train_loss_last: mean training loss over the first and the last tenth
    of the steps (did the run train?). error: why this run failed; its figures are then None.
    """

    seed: int
    accuracy: float | None = None
    eval_loss: float | None = None
    train_loss_first: float | None = None
    train_loss_last: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class ModeResult:
    """One precision mode's figures. A figure is None when it was not measured.

    mode: "fp32", "fp16" or "bf16"; dtype: the autocast dtype ("float32" for no autocast).
    grad_scaler: True when the mode trains with `torch.amp.GradScaler` (fp16).
    step_time: None when the mode failed before timing finished.
    tokens_per_second: tokens per step divided by the median step time.
    peak_memory_bytes: see memory_method for exactly what the number is; None if not measured.
    memory_method: how peak_memory_bytes was measured, and what it leaves out.
    process_rss_peak_bytes: process resident-set high-water mark (CPU runs), reset per mode
        where the kernel allows; not a tensor peak: it includes the interpreter, libraries and
        memory the allocator kept from earlier modes.
    eval_loss: mean cross-entropy on held-out batches after training, in the mode's precision:
        the mean over `accuracy_runs` when there are any, else the timed run's own evaluation.
    accuracy: accuracy on the same held-out batches (0..1), the same way: the mean over the
        seeded accuracy runs, else the timed run's (one run, no band; accuracy_note says which).
    accuracy_runs: the seeded, fixed-length, untimed runs the accuracy comes from, one per seed.
    accuracy_note: where `accuracy` comes from, in words.
    user_syncs_per_step: host-device syncs per step attributed to user code (untimed pass).
    library_syncs_per_step: syncs issued inside torch itself (not the user's to fix).
    sync_sites: where the user syncs came from.
    library_sync_sites: where the library syncs came from, each named (call, operation, library)
        and said to happen on CUDA or not.
    sync_method: how syncs were counted, or why they were not.
    train_loss_first / train_loss_last: mean training loss over the warm-up steps and over the
        last timed repeat, each read once from an on-device sum (None if the step returns no loss).
    flops_per_step: model FLOPs per training step (forward + backward), None if unknown.
    achieved_tflops: flops_per_step / median step time, in TFLOP/s.
    mfu: achieved / peak dense throughput of the device for this dtype (0..1), None if unknown.
    mfu_note: why mfu is None, or which peak figure it used.
    device_busy_fraction: summed kernel time / wall time of profiled steps (CUDA only).
    device_flagged_syncs_per_step: warnings per step from torch.cuda.set_sync_debug_mode("warn")
        during the sync-counting pass (CUDA only; None where the mode could not be set).
    utilization: NVML samples taken during this mode's timed steps, None without NVML.
    memory_split: the peak split into parameters, gradients, optimizer state and the rest
        (measured on CUDA, estimated on CPU), None when the workload gives no model/optimizer;
        memory_split_note then says why.
    weights_fingerprint: sha256 of the model's state_dict right after setup (None: no model named);
        equal in every mode when the modes really start from the same weights.
    chance_accuracy: the accuracy of guessing (reference: 1 / vocabulary), when the workload knows it.
    executed_lines: lines of the user's own files that ran in the sync-counting steps, by path
        (None when not traced); lets a static per-step finding read "not observed at runtime".
    error: why the mode failed ("CUDA out of memory during timed steps: ...", "loss became
        NaN or infinite during warm-up"). Figures measured before the failure are kept.
    """

    mode: str
    dtype: str
    grad_scaler: bool = False
    step_time: StepTiming | None = None
    tokens_per_second: float | None = None
    peak_memory_bytes: int | None = None
    memory_method: str = ""
    process_rss_peak_bytes: int | None = None
    eval_loss: float | None = None
    accuracy: float | None = None
    user_syncs_per_step: float | None = None
    library_syncs_per_step: float | None = None
    sync_sites: tuple[SyncSite, ...] = ()
    library_sync_sites: tuple[SyncSite, ...] = ()
    sync_method: str = ""
    train_loss_first: float | None = None
    train_loss_last: float | None = None
    flops_per_step: float | None = None
    achieved_tflops: float | None = None
    mfu: float | None = None
    mfu_note: str = ""
    device_busy_fraction: float | None = None
    device_flagged_syncs_per_step: float | None = None
    utilization: UtilizationSummary | None = None
    executed_lines: dict[str, tuple[int, ...]] | None = None
    memory_split: MemorySplit | None = None
    memory_split_note: str = ""
    chance_accuracy: float | None = None
    weights_fingerprint: str | None = None
    accuracy_runs: tuple[AccuracyRun, ...] = ()
    accuracy_note: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def accuracy_band(self) -> tuple[float, float] | None:
        """(lowest, highest) accuracy over the seeded runs; None below two measured runs."""
        return seed_band([run.accuracy for run in self.accuracy_runs if run.accuracy is not None])


@dataclass(frozen=True)
class Verdict:
    """One target judged against a measurement.

    name: "speedup", "memory_reduction" or "accuracy_degradation".
    mode: the AMP mode judged against the FP32 baseline ("fp16" or "bf16"; "amp" when no
        AMP mode ran or nothing could run).
    label: the human wording ("AMP speedup over FP32 (bf16)").
    comparison: ">=" or "<=": how measured must relate to target to pass.
    target: the threshold; unit: "x" for ratios, "fraction" for 0..1 quantities.
    measured: the measured value, or None when it could not be measured. A measured value
        can still be NOT_EVALUATED (e.g. a CPU speedup): show it, never as passed.
    status: PASS/MISS only with a measured value; NOT_EVALUATED always has a reason.
    reason: one sentence: why it passed/missed, or why it was not evaluated.
    interval: 95 % bootstrap interval of a ratio (speedup), None where not computed.
    band: (lowest, highest) of the per-seed values behind `measured` (accuracy: the per-seed
        differences FP32 - AMP, each seed's runs starting from the same weights and batches),
        None with fewer than two seeds.
    basis: what exactly was compared (e.g. which part of the peak memory), "" if obvious.
    """

    name: str
    mode: str
    label: str
    comparison: str
    target: float
    unit: str
    measured: float | None
    status: VerdictStatus
    reason: str
    interval: tuple[float, float] | None = None
    basis: str = ""
    band: tuple[float, float] | None = None


@dataclass(frozen=True)
class Thresholds:
    """Targets from the users' requirements; overridable from `[tool.verify-perf]`."""

    min_speedup: float = 1.5
    min_memory_reduction: float = 0.40
    max_accuracy_degradation: float = 0.01


@dataclass(frozen=True)
class Method:
    """How the figures were taken, so a report can state its method next to each figure.

    timer: "cuda-events" or "perf_counter"; warmup_steps: untimed steps per mode before timing;
    steps: timed steps per repeat; repeats: timed repeats per mode; sync_steps: steps of the
    separate, untimed sync-counting pass; eval_batches: held-out batches for loss/accuracy
    (None when a user entry decides);
    seed: the seed every mode starts from (same weights, same data order);
    overhead_probe: how the harness decided whether the workload is overhead-bound;
    notes: anything else a reader needs (e.g. torch.compile on, threads used);
    accuracy_steps: training steps of each seeded accuracy run (None: no such runs);
    accuracy_seeds: the seeds of those runs, one fresh run per mode and seed;
    time_budget_s: the seconds allowed for the whole run (None in results from before budgets);
    elapsed_s: the seconds the run took, on the harness's clock;
    budget_cuts: what the budget cut from the counts asked for, one sentence each (empty: nothing).
    """

    timer: str
    warmup_steps: int
    steps: int
    repeats: int
    sync_steps: int
    eval_batches: int | None
    seed: int
    overhead_probe: str = ""
    notes: tuple[str, ...] = ()
    accuracy_steps: int | None = None
    accuracy_seeds: tuple[int, ...] = ()
    time_budget_s: float | None = None
    elapsed_s: float | None = None
    budget_cuts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    """What ran: the bundled reference preset or a user entry point.

    source: "preset" or "entry"; name: the preset name or "package.module:function";
    parameters: trainable parameter count when known; tokens_per_step: tokens (or samples,
    for non-token workloads) one step consumes; description: one line a reader understands;
    compiled: whether torch.compile was used; ddp_world_size: 1 unless run under torchrun.
    """

    source: str
    name: str
    parameters: int | None = None
    tokens_per_step: int | None = None
    description: str = ""
    compiled: bool = False
    ddp_world_size: int = 1


@dataclass(frozen=True)
class DynamicResult:
    """Everything one harness run produced. `error` set means nothing could be measured.

    fp32_baseline: the FP32 configuration the speedup is judged against, the one the measured
    code itself uses: "fp32" (strict, TF32 off) or "tf32" (float32 matmul precision "high"/"medium").
    overhead_bound: True when the FP32 step leaves the device mostly idle (launch or
    host bound), False when it does not, None when not probed (e.g. on CPU);
    overhead_note says what the probe saw. chart_path is the PNG written next to the
    report, or None with chart_note saying why not.
    """

    workload: Workload
    device: DeviceFacts
    method: Method
    thresholds: Thresholds = field(default_factory=Thresholds)
    fp32_baseline: str = "fp32"
    modes: tuple[ModeResult, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    overhead_bound: bool | None = None
    overhead_note: str = ""
    chart_path: str | None = None
    chart_note: str = ""
    error: str | None = None
    schema_version: int = SCHEMA_VERSION

    def mode(self, name: str) -> ModeResult | None:
        return next((m for m in self.modes if m.mode == name), None)

    @property
    def role(self) -> str:
        """"measured" when the figures are about the user's code (an entry point), else
        "calibration": the bundled reference run measures the machine and toolchain only."""
        return "measured" if self.workload.source == "entry" else "calibration"

    @property
    def failure(self) -> str | None:
        """Why the run counts as failed (exit 2), None when at least one mode measured something."""
        if self.error:
            return self.error
        if self.modes and not any(m.ok for m in self.modes):
            return "every mode failed: " + "; ".join(f"{m.mode}: {m.error}" for m in self.modes)
        return None

    @property
    def fingerprint(self) -> dict[str, Any]:
        """What must match for two runs' figures to be comparable (baseline regressions)."""
        return {
            "device": f"{self.device.name} ({self.device.backend})",
            "torch": self.device.torch_version,
            "workload": f"{self.workload.source} {self.workload.name}",
            "compiled": self.workload.compiled,
            "steps": self.method.steps,
            "threads": self.device.cpu_threads,
            "accuracy_steps": self.method.accuracy_steps,
            "accuracy_seeds": len(self.method.accuracy_seeds),
        }

    def to_dict(self) -> dict[str, Any]:
        data = _jsonable(self)
        data["role"], data["failure"], data["fingerprint"] = self.role, self.failure, self.fingerprint
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DynamicResult:
        """Rebuild a result from `to_dict()` output (used for `--baseline` comparisons)."""
        return _build(cls, data)


def _jsonable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if hasattr(value, "__dataclass_fields__"):
        data = {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, StepTiming):
            data["iqr_ms"] = value.iqr_ms
        return data
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


_NESTED = {
    "device": DeviceFacts,
    "clocks": ClockFacts,
    "utilization": UtilizationSummary,
    "workload": Workload,
    "method": Method,
    "thresholds": Thresholds,
    "step_time": StepTiming,
    "memory_split": MemorySplit,
}
_SEQUENCES = {
    "modes": ModeResult, "verdicts": Verdict, "sync_sites": SyncSite, "library_sync_sites": SyncSite,
    "accuracy_runs": AccuracyRun,
}


def _build(cls: type, data: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            continue
        if isinstance(value, dict) and key in _NESTED:  # MemorySplit.method is a string, not a Method
            value = _build(_NESTED[key], value)
        elif key in _SEQUENCES:
            value = tuple(_build(_SEQUENCES[key], item) for item in value)
        elif key == "status":
            value = VerdictStatus(value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    return cls(**kwargs)


__all__ = [
    "AccuracyRun",
    "FP32_MODES",
    "MODES",
    "SCHEMA_VERSION",
    "ClockFacts",
    "DeviceFacts",
    "DynamicResult",
    "MemorySplit",
    "Method",
    "ModeResult",
    "StepTiming",
    "SyncSite",
    "Thresholds",
    "UtilizationSummary",
    "Verdict",
    "VerdictStatus",
    "Workload",
]
