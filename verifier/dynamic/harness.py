"""Runs every precision mode of one workload from the same seed and data, measures each,
and judges the AMP modes against FP32.

Every mode is set up and warmed, then its timed repeats run round-robin with the other
modes' (`measure.measure_modes`), with more rounds while a speedup interval is wide and the
time budget lasts; every mode trains on the same batches. Any failure becomes the mode's
`error`; the harness itself raises only for bad options, before anything is measured.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from verifier.dynamic import overhead
from verifier.dynamic.accuracy import AccuracyPlan, measure_accuracy, with_accuracy_runs
from verifier.dynamic.entry import EntryError, EntryWorkload, load_entry
from verifier.dynamic.measure import Budget, ProgressCallback, StepCounts, measure_modes
from verifier.dynamic.nvml import Nvml, UtilizationSampler, describe_device, summarize_samples
from verifier.dynamic.results import MODES, DynamicResult, Method, ModeResult, Thresholds, Workload
from verifier.dynamic.timing import timer_kind
from verifier.dynamic.verdicts import judge, not_evaluated
from verifier.dynamic.workload import PresetWorkload, WorkloadSource
from verifier.reference_impl.presets import PRESETS, get_preset
from verifier.reference_impl.train import AUTOCAST_DTYPES

class HarnessUsageError(ValueError):
    """A wrong option (unknown mode or preset, CUDA asked for but absent): exit code 2."""


ENTRY_DEFAULT_COUNTS = StepCounts(warmup=5, steps=10, repeats=5, sync_steps=3)


@dataclass(frozen=True)
class HarnessOptions:
    """What to run and how. None means "the preset's default" (or the device's, for modes).

    preset "auto" picks `gpu` on CUDA and `tiny` on CPU; device "auto" picks CUDA when present;
    modes None means fp32, fp16, bf16 on CUDA and fp32, bf16 on CPU. accuracy_seeds is how many
    seeded accuracy runs each mode gets (seed, seed + 1, ...; 0: none, the timed run's accuracy
    is shown as one run), accuracy_steps their fixed length (None: the preset's or the entry's).
    """

    preset: str = "auto"
    modes: tuple[str, ...] | None = None
    steps: int | None = None
    warmup: int | None = None
    repeats: int | None = None
    sync_steps: int | None = None
    entry: str | None = None
    device: str = "auto"
    seed: int = 0
    compile: bool = False
    thresholds: Thresholds = field(default_factory=Thresholds)
    chart_path: str | None = None
    replace_chart: bool = False  # --force: replace a file at chart_path verify-perf did not write
    threads: int | None = None
    time_budget_s: float = 60.0
    max_repeats: int | None = None
    accuracy_seeds: int = 3
    accuracy_steps: int | None = None


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise HarnessUsageError("--device cuda: no CUDA device is available")
    if name not in ("cpu", "cuda"):
        raise HarnessUsageError(f"unknown device {name!r} (expected auto, cpu or cuda)")
    return torch.device(name)


def resolve_modes(modes: tuple[str, ...] | None, device: torch.device) -> tuple[str, ...]:
    if modes is None:
        return MODES if device.type == "cuda" else ("fp32", "bf16")
    unknown = [m for m in modes if m not in AUTOCAST_DTYPES]
    if unknown or not modes:
        raise HarnessUsageError(f"unknown mode(s) {', '.join(unknown) or '(none)'} (expected {', '.join(MODES)})")
    if "tf32" in modes and device.type != "cuda":
        raise HarnessUsageError("mode tf32 needs a CUDA device: TF32 tensor-core matmuls do not exist on CPU")
    return tuple(m for m in MODES if m in modes)


def fp32_baseline(device: torch.device) -> str:
    """The FP32 configuration the measured code uses (read after its module was imported):
    "tf32" when float32 matmuls may use TF32 tensor cores, else "fp32" (strict)."""
    if device.type != "cuda":
        return "fp32"
    return "tf32" if torch.get_float32_matmul_precision() != "highest" or torch.backends.cuda.matmul.allow_tf32 else "fp32"


def resolve_preset_name(name: str, device: torch.device) -> str:
    if name == "auto":
        return "gpu" if device.type == "cuda" else "tiny"
    if name not in PRESETS:
        raise HarnessUsageError(f"unknown preset {name!r} (expected auto, {', '.join(PRESETS)})")
    if name == "gpu" and device.type != "cuda":
        # At full size on CPU it grows to tens of GB of RSS before anything is measured.
        raise HarnessUsageError("--preset gpu needs a CUDA device and none is in use here; use --preset tiny on CPU")
    return name


def _counts(options: HarnessOptions, defaults: StepCounts) -> StepCounts:
    counts = StepCounts(
        warmup=defaults.warmup if options.warmup is None else options.warmup,
        steps=defaults.steps if options.steps is None else options.steps,
        repeats=defaults.repeats if options.repeats is None else options.repeats,
        sync_steps=defaults.sync_steps if options.sync_steps is None else options.sync_steps,
    )
    if counts.warmup < 0 or counts.steps < 1 or counts.repeats < 1 or counts.sync_steps < 1:
        raise HarnessUsageError("--steps, --repeats and --sync-steps must be at least 1, --warmup at least 0")
    return counts


@dataclass(frozen=True)
class _Plan:
    workload: WorkloadSource
    counts: StepCounts
    eval_batches: int | None
    overhead_hint: str
    cpu_threads: int | None


def _plan(options: HarnessOptions, device: torch.device) -> _Plan:
    """What to run; raises EntryError when a named entry point cannot be loaded."""
    if options.threads is not None and options.threads < 1:
        raise HarnessUsageError("--threads must be at least 1")
    if options.accuracy_seeds < 0 or (options.accuracy_steps is not None and options.accuracy_steps < 1):
        raise HarnessUsageError("--accuracy-seeds must be at least 0 and --accuracy-steps at least 1")
    threads = options.threads if device.type == "cpu" else None
    if options.entry:
        workload = EntryWorkload(options.entry, load_entry(options.entry))
        return _Plan(workload, _counts(options, ENTRY_DEFAULT_COUNTS), None, "", threads)
    preset = get_preset(resolve_preset_name(options.preset, device))
    defaults = StepCounts(preset.bench_warmup, preset.bench_steps, preset.bench_repeats, preset.bench_sync_steps)
    return _Plan(
        workload=PresetWorkload(preset, options.compile),
        counts=_counts(options, defaults),
        eval_batches=preset.eval_batches,
        overhead_hint="the gpu preset is sized to be compute-bound" if preset.name != "gpu" else "",
        cpu_threads=(threads or preset.cpu_threads) if device.type == "cpu" else None,
    )


def run_harness(options: HarnessOptions, progress: ProgressCallback | None = None) -> DynamicResult:
    """Measure every mode; raises only HarnessUsageError (bad options), before running anything."""
    device = resolve_device(options.device)
    modes = resolve_modes(options.modes, device)
    if options.entry is None:
        resolve_preset_name(options.preset, device)
    report = progress or (lambda *_: None)
    nvml, nvml_status = Nvml.open()
    try:
        facts = describe_device(device, nvml, nvml_status)
        try:
            plan = _plan(options, device)
        except EntryError as error:
            counts = _counts(options, ENTRY_DEFAULT_COUNTS)
            method = _method(device, counts, None, options, Budget(4 * counts.repeats, options.time_budget_s))
            return DynamicResult(
                workload=Workload("entry", options.entry or ""),
                device=facts,
                method=method,
                thresholds=options.thresholds,
                verdicts=not_evaluated(modes, options.thresholds, f"not measured: {error}"),
                error=str(error),
            )
        handle = nvml.handle_for(device) if nvml is not None and device.type == "cuda" else None
        # Extra rounds buy a speedup verdict its power; on CPU the speedup is never judged, so
        # there they are added only when --max-repeats asks for them.
        default_rounds = 4 * plan.counts.repeats if device.type == "cuda" else plan.counts.repeats
        budget = Budget(max_rounds=options.max_repeats or default_rounds, seconds=options.time_budget_s)
        if budget.max_rounds < plan.counts.repeats:
            raise HarnessUsageError("--max-repeats must be at least --repeats")
        with _cpu_threads(plan.cpu_threads):
            facts = dataclasses.replace(facts, cpu_threads=torch.get_num_threads())
            results, all_samples, rounds = measure_modes(
                plan.workload, modes, device, facts, plan.counts, options.seed,
                lambda: UtilizationSampler(nvml, handle), report, budget,
            )
            results, accuracy = _accuracy_runs(plan.workload, results, device, options, report)
            method = _method(
                device, dataclasses.replace(plan.counts, repeats=rounds), plan.eval_batches, options, budget,
                plan.counts.repeats, accuracy,
            )
    finally:
        if nvml is not None:
            nvml.close()
    baseline = fp32_baseline(device)
    if not any(r.mode == baseline for r in results):
        baseline = "fp32"  # the code's own configuration was not among the modes asked for
    overhead_bound, overhead_note = _overhead_verdict(results, device, baseline)
    method = dataclasses.replace(method, notes=(_weights_note(results), *method.notes))
    result = DynamicResult(
        workload=plan.workload.info,
        device=dataclasses.replace(facts, utilization=summarize_samples(all_samples, 0.1)),
        method=method,
        thresholds=options.thresholds,
        fp32_baseline=baseline,
        modes=tuple(results),
        verdicts=judge(tuple(results), options.thresholds, device.type, overhead_bound, overhead_note, plan.overhead_hint, baseline),
        overhead_bound=overhead_bound,
        overhead_note=overhead_note,
    )
    if options.chart_path:
        from verifier.dynamic.chart import write_chart

        result = write_chart(result, options.chart_path, force=options.replace_chart)
    return result


def _accuracy_runs(
    workload: WorkloadSource, results: list[ModeResult], device: torch.device, options: HarnessOptions,
    report: ProgressCallback,
) -> tuple[list[ModeResult], AccuracyPlan | None]:
    """Seeded, fixed-length accuracy runs of every mode that measured an accuracy; the modes
    without them keep the timed run's accuracy, labelled as one run."""
    steps = options.accuracy_steps or getattr(workload, "accuracy_steps", None)
    plan = AccuracyPlan(steps, tuple(options.seed + i for i in range(options.accuracy_seeds))) if steps else None
    wanted = tuple(r.mode for r in results if r.ok and r.accuracy is not None)
    runs = measure_accuracy(workload, wanted, device, plan, report) if plan is not None else None
    if not runs:
        why = "--accuracy-seeds 0" if options.accuracy_seeds == 0 else "the workload cannot be re-created per seed"
        if getattr(workload, "form", None) == "step":
            why = "the step form cannot be re-created per seed"
        note = f"one run, no band: the timed run's own evaluation ({why})"
        return [dataclasses.replace(r, accuracy_note=note) if r.accuracy is not None else r for r in results], None
    return [with_accuracy_runs(r, runs[r.mode], plan) if r.mode in runs else r for r in results], plan


def _weights_note(results: list[ModeResult]) -> str:
    """Whether every mode really started from the same weights (state_dict fingerprints)."""
    prints = {r.mode: r.weights_fingerprint for r in results if r.weights_fingerprint}
    if not prints:
        return "same starting weights in every mode: not verified (the step form names no model)"
    if len(set(prints.values())) == 1 and len(prints) == len(results):
        return f"same starting weights in every mode: verified (state_dict fingerprint {next(iter(prints.values()))[:12]})"
    shown = ", ".join(f"{mode} {value[:12]}" for mode, value in prints.items())
    return f"starting weights DIFFER between modes (state_dict fingerprints {shown}): the modes are not comparable"


def _overhead_verdict(results: list[ModeResult], device: torch.device, name: str = "fp32") -> tuple[bool | None, str]:
    """Whether the FP32 step is overhead-bound, from its profiled device busy fraction."""
    if device.type != "cuda":
        return None, "not probed on CPU"
    baseline = next((r for r in results if r.mode == name), None)
    if baseline is None or baseline.device_busy_fraction is None:
        return None, "FP32 device busy time not measured"
    busy = baseline.device_busy_fraction
    return busy < overhead.BUSY_THRESHOLD, f"GPU busy {busy:.0%} of the FP32 step"


@contextmanager
def _cpu_threads(count: int | None) -> Iterator[None]:
    """Cap torch's intra-op threads for the run, restoring the caller's setting after."""
    previous = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _method(
    device: torch.device, counts: StepCounts, eval_batches: int | None, options: HarnessOptions, budget: Budget,
    minimum: int | None = None, accuracy: AccuracyPlan | None = None,
) -> Method:
    minimum = counts.repeats if minimum is None else minimum
    notes = [
        f"timed repeats interleaved round-robin across modes; {counts.repeats} rounds run (at least "
        f"{minimum}, more while a speedup's 95% interval is wider than +/-{budget.rel_width:.0%}, up to "
        f"{budget.max_rounds} rounds or {budget.seconds:g} s)",
        f"torch {torch.__version__}; {torch.get_num_threads()} intra-op CPU thread(s)"
        + (" (--threads)" if options.threads and device.type == "cpu" else ""),
        "every mode is seeded alike and sees the same batches in the same order",
        "loss is summed on the device and checked for NaN/inf after warm-up and after each repeat, outside the timed spans",
    ]
    if device.type == "cuda":
        notes.append(
            "FP32 measured twice: fp32 strict (TF32 off) and tf32 (TF32 tensor-core matmuls on); the speedup is "
            f"judged against {fp32_baseline(device)}, the configuration the measured code uses "
            f"(float32 matmul precision {torch.get_float32_matmul_precision()!r})"
        )
    if options.entry:
        notes.append("user entry point: step counts default to 5 warm-up, 5 x 10 timed, 3 sync-counting steps")
    else:
        notes.append("step time includes fetching the batch from the DataLoader, as in training")
        if options.compile:
            notes.append("model wrapped in torch.compile; compilation happens during warm-up")
    if accuracy is not None:
        notes.append(accuracy.describe() + (" (eager, without DataLoader workers)" if not options.entry else ""))
    return Method(
        timer=timer_kind(device),
        warmup_steps=counts.warmup,
        steps=counts.steps,
        repeats=counts.repeats,
        sync_steps=counts.sync_steps,
        eval_batches=eval_batches,
        seed=options.seed,
        overhead_probe=overhead.METHOD if device.type == "cuda" else "not probed on CPU",
        notes=tuple(notes),
        accuracy_steps=accuracy.steps if accuracy is not None else None,
        accuracy_seeds=accuracy.seeds if accuracy is not None else (),
    )


__all__ = [
    "ENTRY_DEFAULT_COUNTS",
    "HarnessOptions",
    "HarnessUsageError",
    "ProgressCallback",
    "StepCounts",
    "resolve_device",
    "resolve_modes",
    "resolve_preset_name",
    "run_harness",
]
