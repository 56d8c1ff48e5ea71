"""Measures the precision modes of a workload: each mode is set up and warmed (the warm-up
also measures what a step costs, for the time budget), the timed repeats (with peak memory and
NVML sampling) run round-robin across the modes, then each mode has an untimed sync-counting
pass, on CUDA a busy-time probe, and its evaluation.

Each phase records its figures as soon as it has them, so a failure later on keeps what
was already measured; every failure becomes the mode's `error`, never a traceback.
"""

from __future__ import annotations

import gc
import hashlib
import math
import statistics
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import torch

from verifier.dynamic import overhead
from verifier.dynamic.budget import Clock, Ledger, ModeCosts, Plan, Wanted
from verifier.dynamic.entry import EntryError, describe_exception
from verifier.dynamic.flops import model_flop_utilisation
from verifier.dynamic.intervals import ratio_interval
from verifier.dynamic.memory import CPU_METHOD, CUDA_INTERLEAVED_METHOD, measured_split, rss_high_water
from verifier.dynamic.nvml import NvmlSample, UtilizationSampler
from verifier.dynamic.results import FP32_MODES, DeviceFacts, ModeResult
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


class NonFiniteLoss(Exception):
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
            raise NonFiniteLoss(f"loss became NaN or infinite during {phase}")
        return mean


def _bf16_unsupported(device: torch.device) -> bool:
    if device.type != "cuda":
        return False
    try:
        return not torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:
        return not torch.cuda.is_bf16_supported()


@contextmanager
def matmul_precision(mode: str, device: torch.device) -> Iterator[None]:
    """On CUDA, fp32 runs strict (TF32 off) and tf32 with TF32 tensor-core matmuls; the AMP modes
    and CPU runs keep the user's setting. Restored afterwards, so interleaved modes never mix."""
    if device.type != "cuda" or mode not in FP32_MODES:
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    allowed = mode == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


class ModeSession:
    """One precision mode, kept alive from setup to evaluation so that the timed repeats of all
    modes can be interleaved round-robin. Each phase writes its figures as soon as it has them;
    the first failure ends the mode (its error), keeping what was already measured."""

    def __init__(
        self, workload: WorkloadSource, mode: str, device: torch.device, facts: DeviceFacts, counts: StepCounts,
        sampler: UtilizationSampler, report: ProgressCallback, clock: Clock,
    ) -> None:
        self.workload, self.mode, self.device, self.facts, self.counts = workload, mode, device, facts, counts
        self.sampler, self.report, self.clock = sampler, report, clock
        self.figures: dict[str, Any] = {
            "mode": mode,
            "dtype": str(AUTOCAST_DTYPES[mode]).removeprefix("torch."),
            "grad_scaler": mode == "fp16",
        }
        self.error: str | None = None
        self.phase = "setup"
        self.done = 0
        self.run: ModeRun | None = None
        self.samples_ms: list[float] = []
        self.round_seconds: list[float] = []
        self.costs: ModeCosts | None = None
        self.warmed = 0
        self.estimable = False  # on CPU: the workload can estimate this mode's memory split
        self.tracker = _LossTracker(device)
        self._persistent_bytes = 0
        self._transient_bytes = 0

    @property
    def alive(self) -> bool:
        return self.error is None and self.run is not None

    def progress(self, phase: str, steps: int) -> None:
        self.done += steps
        self.report(self.mode, phase, self.done, self.counts.total(self.device))

    def _steps(self, count: int, step: Callable[[], Any] | None = None) -> None:
        step = step or self.run.step
        with matmul_precision(self.mode, self.device):
            for _ in range(count):
                self.tracker.add(step())

    def _guard(self, work: Callable[[], None]) -> None:
        """Run one phase; a failure of any kind (SystemExit from user code too) ends the mode."""
        if self.error is not None:
            return
        try:
            work()
            return
        except KeyboardInterrupt:
            raise
        except BaseException as failure:  # noqa: BLE001 - a workload's failure is report content
            self.error = failure_message(failure, self.phase)
        self.close()

    def prepare(self, seed: int, allowance_s: float) -> None:
        """Setup (fingerprint) and the warm-up, which stops early once it has taken
        `allowance_s` seconds; both are timed for the budget."""
        if self.mode == "bf16" and _bf16_unsupported(self.device):
            self.error = "bf16 is not supported on this GPU"
            return
        self._guard(lambda: self._prepare(seed, allowance_s))

    def _prepare(self, seed: int, allowance_s: float) -> None:
        self.progress("setup", 0)
        started = self.clock()
        before = torch.cuda.memory_allocated(self.device) if self.device.type == "cuda" else 0
        with HostDataTags() if self.device.type != "cuda" else nullcontext():
            self.run = self.workload.open(self.mode, self.device, seed)
        parts = self._parts()
        if parts is not None:
            self.figures["weights_fingerprint"] = state_fingerprint(parts[0])
        if self.device.type != "cuda":
            if parts is None:
                self.figures["memory_split_note"] = "not estimated: the step form names no model and optimizer"
            elif getattr(self.workload, "estimate_memory", None) is None:
                self.figures["memory_split_note"] = "not estimated: the workload cannot be traced"
            else:
                self.estimable = True
        setup_s = self.clock() - started
        self.phase = "warm-up"
        step_seconds = self._warm_up(allowance_s)
        self.figures["train_loss_first"] = self.tracker.take_mean(self.phase)
        if self.device.type == "cuda":
            # What this mode keeps between steps (weights, gradients, optimizer state, batches).
            torch.cuda.synchronize(self.device)
            self._persistent_bytes = torch.cuda.memory_allocated(self.device) - before
        if step_seconds:
            # The later half: the first steps carry lazy initialisation and compilation.
            self.costs = ModeCosts(setup_s, statistics.median(step_seconds[len(step_seconds) // 2:]))
        else:
            self.costs = ModeCosts(setup_s, 0.0)
        self.progress(self.phase, self.warmed)
        self.phase = "timed steps"

    def _warm_up(self, allowance_s: float) -> list[float]:
        """Warm-up steps one by one, each timed on the clock (on CUDA up to a sync, which the
        untimed warm-up can afford), until the count asked for or the allowance is spent; at
        least two when two are asked for, since the first carries compilation and lazy set-up."""
        seconds: list[float] = []
        with matmul_precision(self.mode, self.device):
            while self.warmed < self.counts.warmup and (len(seconds) < 2 or sum(seconds) < allowance_s):
                started = self.clock()
                self.tracker.add(self.run.step())
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                seconds.append(self.clock() - started)
                self.warmed += 1
        return seconds

    def time_repeat(self) -> None:
        """One timed repeat of `steps` steps, with this mode's transient memory peak on CUDA."""
        self._guard(self._time_repeat)

    def _time_repeat(self) -> None:
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.synchronize(self.device)
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        started = self.clock()
        with self.sampler:
            self.samples_ms.append(time_span(lambda: self._steps(self.counts.steps), self.device, self.clock) / self.counts.steps)
        self.round_seconds.append(self.clock() - started)
        if self.costs is not None and not self.costs.step_s:
            self.costs.step_s = self.round_seconds[-1] / self.counts.steps  # no warm-up measured it
        if cuda:
            self._transient_bytes = max(self._transient_bytes, torch.cuda.max_memory_allocated(self.device) - base)
        self.figures["train_loss_last"] = self.tracker.take_mean(f"timed repeat {len(self.samples_ms)}")
        self.progress(self.phase, self.counts.steps)

    def finish(self) -> ModeResult:
        """Figures of the timed repeats, then sync counting, busy probe and evaluation."""
        if self.samples_ms:
            self._timing_figures()
        self._guard(self._after_timing)
        self.sampler.stop()
        self.close()
        return ModeResult(**self.figures, error=self.error)

    def _timing_figures(self) -> None:
        timing = summarize(self.samples_ms)
        run = self.run
        tokens = getattr(run, "tokens_per_step", None) if run is not None else None
        flops = getattr(run, "flops_per_step", None) if run is not None else None
        utilisation = model_flop_utilisation(
            flops, timing.median_ms, self.mode, self.facts.backend, self.facts.name, self.facts.multiprocessors
        )
        if self.device.type == "cuda":
            peak, method = self._persistent_bytes + self._transient_bytes, CUDA_INTERLEAVED_METHOD
            parts = self._parts()
            if parts is not None:
                self.figures["memory_split"] = measured_split(peak, *parts)
            else:
                self.figures["memory_split_note"] = "not split: the step form names no model and optimizer"
            rss = None
        else:
            peak, method, rss = None, CPU_METHOD + "; modes are interleaved, so it covers all of them", rss_high_water()
        self.figures.update(
            step_time=timing,
            tokens_per_second=tokens / (timing.median_ms / 1000.0) if tokens else None,
            peak_memory_bytes=peak,
            memory_method=method,
            process_rss_peak_bytes=rss,
            utilization=self.sampler.summary(),
            flops_per_step=flops,
            achieved_tflops=utilisation.achieved_tflops,
            mfu=utilisation.mfu,
            mfu_note=utilisation.note,
        )

    def _after_timing(self) -> None:
        run = self.run
        self.phase = "sync counting"
        counting_step = getattr(run, "counting_step", run.step)
        self._count_syncs(lambda count: self._steps(count, counting_step))
        self.tracker.take_mean(self.phase)
        self.progress(self.phase, self.counts.sync_steps)
        if self.device.type == "cuda":
            # Profiled apart from the counter, whose Python hooks would inflate host time.
            self.phase = "busy-time probe"
            busy = overhead.probe_device_busy(lambda: self._steps(self.counts.sync_steps), self.device)
            self.figures["device_busy_fraction"] = busy.busy_fraction
            self.tracker.take_mean(self.phase)
            self.progress(self.phase, self.counts.sync_steps)
        self.phase = "evaluation"
        self.figures["chance_accuracy"] = getattr(run, "chance_accuracy", None)
        started = self.clock()
        with matmul_precision(self.mode, self.device):
            self.figures["eval_loss"], self.figures["accuracy"] = run.evaluate()
        if self.costs is not None:
            self.costs.eval_s = self.clock() - started
        self.progress("done", 0)

    def _parts(self) -> tuple[torch.nn.Module, torch.optim.Optimizer] | None:
        return self.run.memory_parts() if self.run is not None and hasattr(self.run, "memory_parts") else None

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
            library_sync_sites=summary.library_sites,
            device_flagged_syncs_per_step=flagged_per_step,
            executed_lines=trace.executed(),
        )

    def close(self) -> None:
        if self.run is not None:
            close_quietly(self.run)
            self.run = None
            release_memory(self.device)


@dataclass(frozen=True)
class Measured:
    """What the timed part of a run produced: per-mode results, the NVML samples, the timed rounds
    run, the plan they followed, the warm-up steps each mode ran, and which modes' memory split the
    workload can still estimate (CPU)."""

    results: list[ModeResult]
    samples: list[NvmlSample]
    rounds: int
    plan: Plan | None
    warmed: dict[str, int]
    estimable: tuple[str, ...]


def measure_modes(
    workload: WorkloadSource,
    modes: tuple[str, ...],
    device: torch.device,
    facts: DeviceFacts,
    counts: StepCounts,
    seed: int,
    samplers: Callable[[], UtilizationSampler],
    report: ProgressCallback,
    planning: Planning,
) -> Measured:
    """Every mode set up and warmed, the plan made from the warm-up's step costs, then timed
    repeats round-robin (fp32, fp16, bf16, fp32, ...) so that drift of the machine hits every mode
    alike; after the plan's rounds, more rounds while a speedup interval is wider than
    `planning.rel_width` and rounds and time remain."""
    ledger = planning.ledger
    sessions = [
        ModeSession(workload, mode, device, facts, counts, samplers(), report, ledger.budget.clock) for mode in modes
    ]
    allowance = ledger.budget.warmup_allowance(len(sessions))
    for session in sessions:
        session.prepare(seed, allowance)
    warmed = {s.mode: s.warmed for s in sessions}
    short = [f"{s.mode} {s.warmed}" for s in sessions if s.costs is not None and s.warmed < counts.warmup]
    if short:
        ledger.cut(f"warm-up steps of {counts.warmup}: {', '.join(short)} (the warm-up may take {allowance:.1f} s per mode)")
    plan = _plan(sessions, planning) if all(s.costs is not None and s.costs.step_s for s in sessions if s.alive) else None
    rounds = 0
    while True:
        live = [s for s in sessions if s.alive]
        if not live:
            break
        for session in live:
            session.time_repeat()
        rounds += 1
        if plan is None:
            plan = _plan(sessions, planning)
        if rounds >= plan.repeats and not _more_rounds(rounds, plan, sessions, planning):
            break
    results = [session.finish() for session in sessions]
    samples = [sample for session in sessions for sample in session.sampler.samples]
    estimable = tuple(s.mode for s in sessions if s.estimable)
    return Measured(results, samples, rounds, plan, warmed, estimable)


@dataclass(frozen=True)
class Planning:
    """How the timed part is planned: the ledger of the whole run's budget, what the options ask
    for, the modes that will get accuracy runs, and when adaptive rounds stop (`rel_width`)."""

    ledger: Ledger
    wanted: Callable[[], Wanted]
    accuracy_modes: Callable[[], tuple[str, ...]]
    rel_width: float = 0.05


def _plan(sessions: list[ModeSession], planning: Planning) -> Plan:
    ledger = planning.ledger
    ledger.costs = {s.mode: s.costs for s in sessions if s.alive and s.costs is not None}
    plan = ledger.make_plan(planning.wanted(), planning.accuracy_modes())
    for session in sessions:
        session.counts = replace(session.counts, steps=plan.steps, sync_steps=plan.sync_steps)
    return plan


def _more_rounds(rounds: int, plan: Plan, sessions: list[ModeSession], planning: Planning) -> bool:
    """Another round while a speedup interval is wide, the plan allows more rounds, and one more
    round leaves the later phases their time."""
    if rounds >= plan.max_rounds:
        return False
    live = [s for s in sessions if s.alive]
    if not planning.ledger.another_round_fits(sum(s.round_seconds[-1] for s in live if s.round_seconds)):
        return False
    base = next((s for s in live if s.mode == "fp32"), None)
    if base is None:
        return False
    for session in live:
        if session is base:
            continue
        interval = ratio_interval(tuple(base.samples_ms), tuple(session.samples_ms))
        ratio = statistics.median(base.samples_ms) / statistics.median(session.samples_ms)
        if interval is None or (interval[1] - interval[0]) / 2 > planning.rel_width * ratio:
            return True
    return False


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


def failure_message(failure: BaseException, phase: str) -> str:
    """The report's words for a workload that failed during `phase` (user code can raise anything,
    SystemExit too): the timed runs and the accuracy runs say it alike."""
    if isinstance(failure, (NonFiniteLoss, EntryError)):
        return str(failure)
    if isinstance(failure, torch.cuda.OutOfMemoryError):
        return f"CUDA out of memory during {phase}: {_first_line(failure)}"
    return f"{phase} raised {describe_exception(failure)}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def close_quietly(run: ModeRun) -> None:
    try:
        run.close()
    except Exception:  # noqa: BLE001, S110 - closing a failed run must not hide its error
        pass


def release_memory(device: torch.device) -> None:
    """Once per mode: each mode starts with only its own tensors alive and an empty cache,
    so NVML's memory-used samples and a later OOM belong to that mode alone."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()  # verify-perf: ignore[VP403]
