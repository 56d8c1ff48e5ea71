"""Accuracy independent of timing: per mode and per seed, a fresh run trained for a fixed
number of steps, untimed, then evaluated on held-out batches.

The timed run's own accuracy depends on how many steps the timing happened to take (--steps,
--repeats, adaptive rounds) and comes from one seed, so it cannot say whether AMP costs
accuracy. Here every run of a seed starts from the same weights and sees the same batches in
every mode, so the per-seed difference FP32 - AMP isolates the precision, and several seeds
give the band that says whether the difference is larger than the noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from verifier.dynamic.budget import Ledger, accuracy_cost
from verifier.dynamic.measure import (
    NonFiniteLoss, ProgressCallback, close_quietly, failure_message, matmul_precision, release_memory,
)
from verifier.dynamic.results import AccuracyRun, ModeResult
from verifier.dynamic.workload import ModeRun


@dataclass(frozen=True)
class AccuracyPlan:
    """The seeded runs to make; `cut` says what the time budget took from what was asked."""

    steps: int
    seeds: tuple[int, ...]
    cut: str = ""

    def describe(self) -> str:
        seeds = ", ".join(str(seed) for seed in self.seeds)
        count = f"{len(self.seeds)} seeds" if len(self.seeds) > 1 else "one seed"
        return (
            f"accuracy: {count} ({seeds}), each a fresh run per mode trained {self.steps} steps, untimed, "
            "then evaluated on the held-out batches; a seed's runs start from the same weights and see the "
            "same batches in every mode"
        )


def measure_accuracy(
    workload: Any, modes: tuple[str, ...], device: torch.device, plan: AccuracyPlan, report: ProgressCallback,
    ledger: Ledger | None = None,
) -> tuple[dict[str, tuple[AccuracyRun, ...]] | None, AccuracyPlan]:
    """The seeded runs of every mode, seed by seed, and the plan as it ran; None when the workload
    cannot be re-created per seed (the step form). A failed run is an AccuracyRun with its error.
    With a `ledger`, a seed starts only if its runs still fit in the budget (the first from the
    estimate, later ones from what the previous seed took); the plan then says where it stopped."""
    opener: Callable[[str, torch.device, int], ModeRun | None] | None = getattr(workload, "accuracy_run", None)
    if opener is None or not modes or not plan.seeds:
        return None, plan
    runs: dict[str, list[AccuracyRun]] = {mode: [] for mode in modes}
    total = plan.steps * len(plan.seeds)
    seed_seconds = accuracy_cost(ledger.costs, modes, 1, plan.steps) if ledger is not None else 0.0
    for index, seed in enumerate(plan.seeds):
        if ledger is not None and not ledger.fits(seed_seconds):
            plan = _stopped(plan, index)
            break
        started = ledger.budget.clock() if ledger is not None else 0.0
        for mode in modes:
            outcome = _one_run(opener, mode, device, seed, plan.steps, ledger)
            if outcome is None:
                return None, plan
            runs[mode].append(outcome)
            report(mode, f"accuracy, seed {seed}", (index + 1) * plan.steps, total)
        if ledger is not None:
            seed_seconds = ledger.budget.clock() - started
    if not runs[modes[0]]:
        return None, plan
    return {mode: tuple(found) for mode, found in runs.items()}, plan


def _stopped(plan: AccuracyPlan, done: int) -> AccuracyPlan:
    wanted = len(plan.seeds)
    text = f"accuracy runs: stopped after {done} of {wanted} planned seeds (the next would not fit in the budget)"
    return replace(plan, seeds=plan.seeds[:done], cut="; ".join(part for part in (plan.cut, text) if part))


def _one_run(
    opener: Callable[[str, torch.device, int], ModeRun | None], mode: str, device: torch.device, seed: int, steps: int,
    ledger: Ledger | None = None,
) -> AccuracyRun | None:
    run = None
    try:
        started = ledger.budget.clock() if ledger is not None else 0.0
        run = opener(mode, device, seed)
        if run is None:
            return None
        if ledger is not None and mode in ledger.costs:
            ledger.costs[mode].accuracy_setup_s = ledger.budget.clock() - started
        with matmul_precision(mode, device):
            first, last = _train(run, steps, device)
            eval_loss, accuracy = run.evaluate()
        return AccuracyRun(seed, accuracy, eval_loss, first, last)
    except KeyboardInterrupt:
        raise
    except BaseException as failure:  # noqa: BLE001 - a workload's failure is report content
        return AccuracyRun(seed, error=failure_message(failure, "accuracy run"))
    finally:
        if run is not None:
            close_quietly(run)
            release_memory(device)


def _train(run: ModeRun, steps: int, device: torch.device) -> tuple[float | None, float | None]:
    """Train `steps` steps; the mean losses of the first and last tenth, read once at the end."""
    tenth = max(1, steps // 10)
    sums = torch.zeros(2, device=device, dtype=torch.float64)
    counts = [0, 0]
    for step in range(steps):
        loss = run.step()
        for slot, inside in enumerate((step < tenth, step >= steps - tenth)):
            if inside and isinstance(loss, (torch.Tensor, int, float)):
                sums[slot] += loss.detach().to(device, torch.float64).sum() if isinstance(loss, torch.Tensor) else float(loss)
                counts[slot] += 1
    # One read per accuracy run, after all its steps (the loop above never reads the device).
    totals = sums.tolist()  # verify-perf: ignore[VP201]
    first, last = (total / count if count else None for total, count in zip(totals, counts))
    for value in (first, last):
        if value is not None and not math.isfinite(value):
            raise NonFiniteLoss("loss became NaN or infinite during the accuracy run")
    return first, last


def with_accuracy_runs(result: ModeResult, runs: tuple[AccuracyRun, ...], plan: AccuracyPlan) -> ModeResult:
    """The mode's accuracy and eval loss become the means over its seeded runs."""
    accuracies = [run.accuracy for run in runs if run.accuracy is not None]
    losses = [run.eval_loss for run in runs if run.eval_loss is not None]
    failed = [run for run in runs if run.error]
    note = f"mean of {len(runs)} seeded runs of {plan.steps} steps each (seeds {', '.join(str(r.seed) for r in runs)})"
    if plan.cut:
        note += f"; cut by the time budget: {plan.cut}"
    if failed:
        note += "; failed: " + "; ".join(f"seed {run.seed}: {run.error}" for run in failed)
    return replace(
        result,
        accuracy=statistics.fmean(accuracies) if accuracies else None,
        eval_loss=statistics.fmean(losses) if losses else None,
        accuracy_runs=runs,
        accuracy_note=note,
    )
