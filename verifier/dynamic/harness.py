"""Runs every precision mode of one workload from the same seed and data, measures each,
and judges the AMP modes against FP32.

Every mode is set up and warmed, then its timed repeats run round-robin with the other
modes' (`measure.measure_modes`), with more rounds while a speedup interval is wide and the
time budget lasts; every mode trains on the same batches. The seeded accuracy runs and, on CPU,
the memory estimate follow, as far as the whole run's time budget allows (`budget`). Any failure
becomes the mode's `error`; the harness itself raises only for bad options, before anything is
measured.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from verifier.dynamic import overhead
from verifier.dynamic.accuracy import AccuracyPlan, measure_accuracy, with_accuracy_runs
from verifier.dynamic.budget import Clock, Ledger, TimeBudget, Wanted
from verifier.dynamic.entry import EntryError, EntryWorkload, load_entry
from verifier.dynamic.measure import Measured, Planning, ProgressCallback, StepCounts, measure_modes
from verifier.dynamic.nvml import Nvml, UtilizationSampler, describe_device, summarize_samples
from verifier.dynamic.results import FP32_MODES, MODES, DynamicResult, Method, ModeResult, Thresholds, Workload
from verifier.dynamic.timing import timer_kind
from verifier.dynamic.verdicts import judge, not_evaluated
from verifier.dynamic.workload import PresetWorkload, WorkloadSource
from verifier.reference_impl.presets import PRESETS, get_preset
from verifier.reference_impl.train import AUTOCAST_DTYPES

class HarnessUsageError(ValueError):
    """A wrong option (unknown mode or preset, CUDA asked for but absent): exit code 2."""


ENTRY_DEFAULT_COUNTS = StepCounts(warmup=5, steps=10, repeats=5, sync_steps=3)
ENTRY_TIME_BUDGET_S = 120.0
"""The whole run's default budget for a user entry point (a preset names its own)."""
CHART_RESERVE_S = 1.0
"""Kept back from the budget when a chart is drawn after the measurements."""
ESTIMATE_GUESS_S = 1.0
"""What the first CPU memory estimate is assumed to cost (it loads PyTorch's tracing machinery)."""


@dataclass(frozen=True)
class HarnessOptions:
    """What to run and how. None means "the preset's default" (or the device's, for modes).

    preset "auto" picks `gpu` on CUDA and `tiny` on CPU; device "auto" picks CUDA when present;
    modes None means fp32, fp16, bf16 on CUDA and fp32, bf16 on CPU. accuracy_seeds is how many
    seeded accuracy runs each mode gets (seed, seed + 1, ...; 0: none, the timed run's accuracy
    is shown as one run), accuracy_steps their fixed length (None: the preset's or the entry's).
    time_budget_s bounds the whole run (None: the preset's, or ENTRY_TIME_BUDGET_S for an entry);
    what it cuts from the counts asked for is reported.
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
    time_budget_s: float | None = None
    budget_started_at: float | None = None  # a time.perf_counter() reading the budget counts from
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
    time_budget_s: float


def _plan(options: HarnessOptions, device: torch.device) -> _Plan:
    """What to run; raises EntryError when a named entry point cannot be loaded."""
    if options.threads is not None and options.threads < 1:
        raise HarnessUsageError("--threads must be at least 1")
    if options.accuracy_seeds < 0 or (options.accuracy_steps is not None and options.accuracy_steps < 1):
        raise HarnessUsageError("--accuracy-seeds must be at least 0 and --accuracy-steps at least 1")
    if options.time_budget_s is not None and not 0 < options.time_budget_s < math.inf:
        raise HarnessUsageError("--time-budget must be a finite number of seconds above 0")
    threads = options.threads if device.type == "cpu" else None
    if options.entry:
        workload = EntryWorkload(options.entry, load_entry(options.entry))
        budget = options.time_budget_s or ENTRY_TIME_BUDGET_S
        return _Plan(workload, _counts(options, ENTRY_DEFAULT_COUNTS), None, "", threads, budget)
    preset = get_preset(resolve_preset_name(options.preset, device))
    defaults = StepCounts(preset.bench_warmup, preset.bench_steps, preset.bench_repeats, preset.bench_sync_steps)
    return _Plan(
        workload=PresetWorkload(preset, options.compile),
        counts=_counts(options, defaults),
        eval_batches=preset.eval_batches,
        overhead_hint="the gpu preset is sized to be compute-bound" if preset.name != "gpu" else "",
        cpu_threads=(threads or preset.cpu_threads) if device.type == "cpu" else None,
        time_budget_s=options.time_budget_s or preset.bench_time_budget_s,
    )


def run_harness(
    options: HarnessOptions, progress: ProgressCallback | None = None, clock: Clock = time.perf_counter,
) -> DynamicResult:
    """Measure every mode within the time budget (counted on `clock` from this call); raises only
    HarnessUsageError (bad options), before running anything."""
    reserve = CHART_RESERVE_S if options.chart_path else 0.0
    budget = TimeBudget(options.time_budget_s or ENTRY_TIME_BUDGET_S, clock, options.budget_started_at, reserve)
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
            method = _method(device, counts, None, options, 4 * counts.repeats, budget)
            return DynamicResult(
                workload=Workload("entry", options.entry or ""),
                device=facts,
                method=method,
                thresholds=options.thresholds,
                verdicts=not_evaluated(modes, options.thresholds, f"not measured: {error}"),
                error=str(error),
            )
        budget.seconds = plan.time_budget_s
        handle = nvml.handle_for(device) if nvml is not None and device.type == "cuda" else None
        # Extra rounds buy a speedup verdict its power; on CPU the speedup is never judged, so
        # there they are added only when --max-repeats asks for them.
        default_rounds = 4 * plan.counts.repeats if device.type == "cuda" else plan.counts.repeats
        max_rounds = options.max_repeats or default_rounds
        if max_rounds < plan.counts.repeats:
            raise HarnessUsageError("--max-repeats must be at least --repeats")
        ledger = Ledger(budget, cuda=device.type == "cuda")
        # The baseline is read once the entry has run: its code may set the matmul precision when called.
        planning = Planning(
            ledger,
            lambda: _wanted(plan, options, max_rounds),
            lambda: _accuracy_modes(plan.workload, modes, _baseline(plan.workload, device, modes)),
        )
        with _cpu_threads(plan.cpu_threads):
            facts = dataclasses.replace(facts, cpu_threads=torch.get_num_threads())
            measured = measure_modes(
                plan.workload, modes, device, facts, plan.counts, options.seed,
                lambda: UtilizationSampler(nvml, handle), report, planning,
            )
            baseline = _baseline(plan.workload, device, modes)
            results, accuracy = _accuracy_runs(plan.workload, measured.results, device, options, report, ledger, baseline)
            results = _memory_estimates(plan.workload, results, measured.estimable, ledger, options.seed)
            method = _method(
                device, plan.counts, plan.eval_batches, options, max_rounds, budget, measured, accuracy, ledger, baseline,
            )
    finally:
        if nvml is not None:
            nvml.close()
    overhead_bound, overhead_note = _overhead_verdict(results, device, baseline)
    method = dataclasses.replace(method, notes=(_weights_note(results), *method.notes))
    result = DynamicResult(
        workload=plan.workload.info,
        device=dataclasses.replace(facts, utilization=summarize_samples(measured.samples, 0.1)),
        method=method,
        thresholds=options.thresholds,
        fp32_baseline=baseline,
        modes=tuple(results),
        verdicts=judge(
            tuple(results), options.thresholds, device.type, overhead_bound, overhead_note, plan.overhead_hint, baseline,
            accuracy.cut if accuracy is not None else _dropped_accuracy(ledger),
        ),
        overhead_bound=overhead_bound,
        overhead_note=overhead_note,
    )
    if options.chart_path:
        from verifier.dynamic.chart import write_chart

        result = write_chart(result, options.chart_path, force=options.replace_chart)
    return result


def _baseline(workload: WorkloadSource, device: torch.device, modes: tuple[str, ...]) -> str:
    """The FP32 configuration the speedup and the accuracy are judged against: the workload's own
    when it declares one (the reference trains FP32 with TF32 matmuls on CUDA), else the one the
    code set up; strict fp32 when that configuration is not among the modes asked for."""
    declared = getattr(workload, "fp32_configuration", None)
    baseline = declared if declared and device.type == "cuda" else fp32_baseline(device)
    return baseline if baseline in modes else "fp32"


def _wanted(plan: _Plan, options: HarnessOptions, max_rounds: int) -> Wanted:
    """What the options ask for; read after set-up, when an entry has named its accuracy_steps."""
    steps = options.accuracy_steps or getattr(plan.workload, "accuracy_steps", None)
    seeds = tuple(options.seed + i for i in range(options.accuracy_seeds)) if steps else ()
    counts = plan.counts
    return Wanted(counts.steps, counts.repeats, max_rounds, counts.sync_steps, seeds, steps)


def _accuracy_modes(workload: WorkloadSource, modes: tuple[str, ...], baseline: str) -> tuple[str, ...]:
    """The modes that get seeded accuracy runs: the AMP modes and the FP32 baseline. Strict FP32,
    when it is not the baseline, is timed only: training it again would buy nothing judged."""
    if getattr(workload, "form", None) == "step" or getattr(workload, "accuracy_run", None) is None:
        return ()
    return tuple(m for m in modes if m not in FP32_MODES or m == baseline)


def _accuracy_runs(
    workload: WorkloadSource, results: list[ModeResult], device: torch.device, options: HarnessOptions,
    report: ProgressCallback, ledger: Ledger, baseline: str,
) -> tuple[list[ModeResult], AccuracyPlan | None]:
    """Seeded, fixed-length accuracy runs of the baseline and the AMP modes that measured an
    accuracy, as many as fit in the budget; the other modes keep the timed run's accuracy,
    labelled as one run."""
    ok = {r.mode for r in results if r.ok and r.accuracy is not None}
    modes = tuple(m for m in _accuracy_modes(workload, tuple(r.mode for r in results), baseline) if m in ok)
    wanted_steps = options.accuracy_steps or getattr(workload, "accuracy_steps", None)
    wanted_seeds = tuple(options.seed + i for i in range(options.accuracy_seeds)) if wanted_steps else ()
    runs, plan = None, None
    if modes and wanted_seeds:
        choice = ledger.choose_accuracy(wanted_seeds, wanted_steps, modes)
        if choice.seeds:
            runs, plan = measure_accuracy(workload, modes, device, AccuracyPlan(choice.steps, choice.seeds, choice.cut), report, ledger)
            if plan.cut:
                ledger.cut(plan.cut)
        else:
            ledger.cut(choice.cut)
    if not runs:
        why = "--accuracy-seeds 0" if options.accuracy_seeds == 0 else "the workload cannot be re-created per seed"
        if getattr(workload, "form", None) == "step":
            why = "the step form cannot be re-created per seed"
        elif wanted_seeds and modes:
            why = "the time budget left no time for the seeded runs"
        note = f"one run, no band: the timed run's own evaluation ({why})"
        return [_one_run_note(r, note, baseline) for r in results], None
    timed_only = f"timed only: strict FP32 is not the accuracy baseline ({baseline} is); one run, no band: the timed run's own evaluation"
    return [
        with_accuracy_runs(r, runs[r.mode], plan) if r.mode in runs
        else dataclasses.replace(r, accuracy_note=timed_only) if r.accuracy is not None and r.mode == "fp32"
        else r
        for r in results
    ], plan


def _one_run_note(result: ModeResult, note: str, baseline: str) -> ModeResult:
    if result.accuracy is None:
        return result
    if result.mode == "fp32" and baseline != "fp32":
        note = f"timed only: strict FP32 is not the accuracy baseline ({baseline} is); {note}"
    return dataclasses.replace(result, accuracy_note=note)


def _dropped_accuracy(ledger: Ledger) -> str:
    return next((cut for cut in ledger.cuts if cut.startswith("accuracy runs: none")), "")


def _memory_estimates(
    workload: WorkloadSource, results: list[ModeResult], estimable: tuple[str, ...], ledger: Ledger, seed: int,
) -> list[ModeResult]:
    """CPU only: each estimable mode's peak split, estimated on fake tensors, while the budget
    lasts (never judged, so it comes last); a mode left out says so."""
    estimate = getattr(workload, "estimate_memory", None)
    estimable = tuple(r.mode for r in results if r.ok and r.mode in estimable)
    if estimate is None or not estimable:
        return results
    guess = ESTIMATE_GUESS_S + 10 * max((c.step_s for c in ledger.costs.values()), default=0.0)
    splits: dict[str, object] = {}
    for mode in estimable:
        if not ledger.fits(guess):
            left = max(0.0, ledger.budget.remaining())
            splits[mode] = f"not estimated: cut by the time budget (an estimate takes about {guess:.1f} s, {left:.1f} s were left)"
            continue
        started = ledger.budget.clock()
        splits[mode] = estimate(mode, seed)
        guess = ledger.budget.clock() - started
    skipped = [mode for mode, split in splits.items() if isinstance(split, str) and "time budget" in split]
    if skipped:
        ledger.cut(f"memory split estimate: not made for {', '.join(skipped)}")
    return [
        r if r.mode not in splits
        else dataclasses.replace(r, memory_split_note=splits[r.mode]) if isinstance(splits[r.mode], str)
        else dataclasses.replace(r, memory_split=splits[r.mode])
        for r in results
    ]


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
    device: torch.device, counts: StepCounts, eval_batches: int | None, options: HarnessOptions, max_rounds: int,
    budget: TimeBudget, measured: Measured | None = None, accuracy: AccuracyPlan | None = None,
    ledger: Ledger | None = None, baseline: str = "fp32",
) -> Method:
    plan = measured.plan if measured is not None else None
    rounds = measured.rounds if measured is not None else counts.repeats
    minimum = plan.repeats if plan is not None else counts.repeats
    steps = plan.steps if plan is not None else counts.steps
    sync_steps = plan.sync_steps if plan is not None else counts.sync_steps
    warmup = min(measured.warmed.values(), default=counts.warmup) if measured is not None else counts.warmup
    cuts = tuple(ledger.cuts) if ledger is not None else ()
    rounds_note = (
        f"timed repeats interleaved round-robin across modes; {rounds} rounds run (at least "
        f"{minimum}, more while a speedup's 95% interval is wider than +/-5%, up to "
        f"{max_rounds} rounds, while the time budget lasts)"
    )
    notes = [
        rounds_note,
        f"torch {torch.__version__}; {torch.get_num_threads()} intra-op CPU thread(s)"
        + (" (--threads)" if options.threads and device.type == "cpu" else ""),
        "every mode is seeded alike and sees the same batches in the same order",
        "loss is summed on the device and checked for NaN/inf after warm-up and after each repeat, outside the timed spans",
        f"time budget {budget.seconds:g} s for the whole run (set-up, warm-up, timed rounds, sync counting, evaluation, "
        f"accuracy runs{', memory estimate' if device.type == 'cpu' else ''}): {budget.elapsed():.1f} s used; "
        + (f"cut to fit: {'; '.join(cuts)}" if cuts else "nothing cut"),
    ]
    if device.type == "cuda":
        notes.append(
            "FP32 measured twice: fp32 strict (TF32 off) and tf32 (TF32 tensor-core matmuls on); speedup and "
            f"accuracy are judged against {baseline}, the configuration the measured code uses "
            + ("(the reference trains FP32 with TF32 matmuls)" if not options.entry
               else f"(float32 matmul precision {torch.get_float32_matmul_precision()!r})")
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
        warmup_steps=warmup,
        steps=steps,
        repeats=rounds,
        sync_steps=sync_steps,
        eval_batches=eval_batches,
        seed=options.seed,
        overhead_probe=overhead.METHOD if device.type == "cuda" else "not probed on CPU",
        notes=tuple(notes),
        accuracy_steps=accuracy.steps if accuracy is not None else None,
        accuracy_seeds=accuracy.seeds if accuracy is not None else (),
        time_budget_s=budget.seconds,
        elapsed_s=round(budget.elapsed(), 3),
        budget_cuts=cuts,
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
