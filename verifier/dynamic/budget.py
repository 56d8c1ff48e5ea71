"""The whole run's time budget: what each phase may cost, and what was cut to fit.

`--time-budget` bounds everything the harness does: setting up each mode, the warm-up, the timed
rounds, the sync-counting pass, the evaluation, the seeded accuracy runs and (on CPU) the memory
estimate. The warm-up measures what a step costs in each mode; from those costs `plan_run` picks
the fullest plan that fits what is left, cutting in a fixed order (`plan_run` lists it), and every
cut is a sentence in the result. Before the accuracy runs the plan is made again from the measured
costs, and every phase checks the clock before it starts.

Pure Python and a clock: a test drives it with a fake clock and fake costs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace

Clock = Callable[[], float]
"""Seconds on a monotonic clock (`time.perf_counter`; a fake one in tests)."""

SYNC_COUNTING_COST = 2.0
SYNC_COUNTING_OVERHEAD_S = 0.25
"""A sync-counted step costs about two plain steps plus a quarter second: the two torch modes and
the line trace add a fixed cost per operator (measured on the tiny preset: +0.13 to +0.2 s a step)."""
BUSY_PROBE_COST = 2.0
"""A step under the CUDA busy-time profiler costs about this many plain steps."""
EVALUATION_GUESS = 3.0
EVALUATION_OVERHEAD_S = 0.25
"""Evaluation is guessed at three steps and a quarter second (a loader may start a worker) until
it has been measured once."""
ACCURACY_STEP_COST = 1.2
"""An accuracy-run step costs about this many timed steps: its batches are made in-process, with no
loader worker alongside (measured on the tiny preset: 36 steps took the time of 44 to 50)."""
WARMUP_SHARE = 0.25
"""Of the budget, the most the warm-up of all modes together may take."""
MIN_ROUNDS = 3
"""Timed rounds kept before the accuracy runs are given up: a median of three, an interval."""
FLOOR_ROUNDS = 2
"""The fewest timed rounds: a ratio interval needs two samples per mode."""
MIN_ACCURACY_SEEDS = 2
"""Below two seeds there is no band, and one run is never judged."""
MIN_ACCURACY_SHARE = 0.5
"""Accuracy runs are not cut below half their steps: shorter ones have not trained."""
MARGIN = 0.9
"""Plans fill this share of the time left: step times on a shared machine wander."""


class TimeBudget:
    """Seconds allowed for the whole run, counted from `started` (a reading of `clock`; default:
    now). `reserve_s` is kept back for work after the measurements (drawing the chart)."""

    def __init__(
        self, seconds: float, clock: Clock = time.perf_counter, started: float | None = None, reserve_s: float = 0.0,
    ) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started = clock() if started is None else started
        self.reserve_s = reserve_s

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float:
        return self.seconds - self.reserve_s - self.elapsed()

    def warmup_allowance(self, modes: int) -> float:
        """Seconds one mode's warm-up may take (set-up not included): a share of what is left."""
        return WARMUP_SHARE * max(0.0, self.remaining()) / max(1, modes)


@dataclass
class ModeCosts:
    """Seconds measured for one mode: setting it up, one step after warm-up, one evaluation
    (None until measured) and one accuracy run's set-up (None until measured)."""

    setup_s: float
    step_s: float
    eval_s: float | None = None
    accuracy_setup_s: float | None = None

    def evaluation(self) -> float:
        return self.eval_s if self.eval_s is not None else EVALUATION_GUESS * self.step_s + EVALUATION_OVERHEAD_S

    def counted_step(self) -> float:
        return SYNC_COUNTING_COST * self.step_s + SYNC_COUNTING_OVERHEAD_S


@dataclass(frozen=True)
class Wanted:
    """What the options ask for, before the budget has its say."""

    steps: int
    repeats: int
    max_rounds: int
    sync_steps: int
    accuracy_seeds: tuple[int, ...] = ()
    accuracy_steps: int | None = None


@dataclass(frozen=True)
class Plan:
    """What will run after the warm-up; `cuts` says in words what is less than asked."""

    steps: int
    repeats: int
    max_rounds: int
    sync_steps: int
    accuracy_seeds: tuple[int, ...] = ()
    accuracy_steps: int | None = None
    cuts: tuple[str, ...] = ()
    accuracy_cut: str = ""
    needed_s: float = 0.0
    over_budget: bool = False


@dataclass(frozen=True)
class AccuracyChoice:
    seeds: tuple[int, ...]
    steps: int | None
    cut: str = ""


def timing_cost(
    costs: Mapping[str, ModeCosts], rounds: int, steps: int, sync_steps: int, cuda: bool,
) -> float:
    """Seconds of the timed rounds, the sync-counting pass, the busy probe (CUDA) and evaluation."""
    total = 0.0
    for cost in costs.values():
        total += rounds * steps * cost.step_s + sync_steps * cost.counted_step()
        if cuda:
            total += sync_steps * cost.step_s * BUSY_PROBE_COST
        total += cost.evaluation()
    return total


def accuracy_cost(costs: Mapping[str, ModeCosts], modes: tuple[str, ...], seeds: int, steps: int | None) -> float:
    """Seconds of `seeds` accuracy runs of `steps` steps in each of `modes`."""
    if not seeds or not steps:
        return 0.0
    fixed, per_step = _accuracy_seed_costs(costs, modes)
    return seeds * (fixed + steps * per_step)


def _accuracy_seed_costs(costs: Mapping[str, ModeCosts], modes: tuple[str, ...]) -> tuple[float, float]:
    """(set-up and evaluation, one step) of one seed's runs over `modes`."""
    known = [costs[m] for m in modes if m in costs]
    # Until a run has been set up, the cheapest mode's set-up stands for it: the first mode's also
    # paid for one-time imports (torch's compiler stack loads with the first optimizer).
    cheapest = min((c.setup_s for c in costs.values()), default=0.0)
    fixed = sum((c.accuracy_setup_s if c.accuracy_setup_s is not None else cheapest) + c.evaluation() for c in known)
    return fixed, ACCURACY_STEP_COST * sum(c.step_s for c in known)


def choose_accuracy(
    wanted_seeds: tuple[int, ...], wanted_steps: int | None, costs: Mapping[str, ModeCosts], modes: tuple[str, ...],
    seconds: float, policy: str = "shorter",
) -> AccuracyChoice:
    """The most seeds (then steps) that fit in `seconds`: every seed asked for, down to two; then,
    with policy "shorter", two seeds with fewer steps, down to half; else (and with "none") none."""
    if not wanted_seeds or not wanted_steps or not modes:
        return AccuracyChoice(wanted_seeds, wanted_steps)
    asked = f"{len(wanted_seeds)} seed{'s' if len(wanted_seeds) > 1 else ''} x {wanted_steps} steps"
    lowest = min(MIN_ACCURACY_SEEDS, len(wanted_seeds))
    for count in range(len(wanted_seeds), lowest - 1 if policy != "none" else len(wanted_seeds), -1):
        if accuracy_cost(costs, modes, count, wanted_steps) <= seconds:
            cut = "" if count == len(wanted_seeds) else (
                f"accuracy runs: {count} of {len(wanted_seeds)} seeds ({wanted_steps} steps each)"
            )
            return AccuracyChoice(wanted_seeds[:count], wanted_steps, cut)
    count = min(MIN_ACCURACY_SEEDS, len(wanted_seeds))
    shortest = max(1, math.ceil(MIN_ACCURACY_SHARE * wanted_steps))
    fixed, per_step = _accuracy_seed_costs(costs, modes)
    steps = min(wanted_steps, math.floor((seconds / count - fixed) / per_step)) if per_step > 0 else 0
    if policy == "shorter" and steps >= shortest:
        seeds = f"{count} of {len(wanted_seeds)} seeds, " if count < len(wanted_seeds) else ""
        return AccuracyChoice(wanted_seeds[:count], steps, f"accuracy runs: {seeds}{steps} of {wanted_steps} steps each")
    needed = accuracy_cost(costs, modes, count, shortest)
    return AccuracyChoice(
        (), None,
        f"accuracy runs: none of the {asked} asked for (the smallest useful set needs about {needed:.1f} s, "
        f"{max(0.0, seconds):.1f} s were left)",
    )


def _ladder(wanted: Wanted, accuracy_first: bool) -> Iterator[tuple[int, int, int, str]]:
    """(rounds, steps per round, sync steps, accuracy policy) from the fullest run to the smallest;
    the policy is "seeds" (full-length runs, fewer seeds), "shorter" (also shorter runs) or "none".
    With `accuracy_first` (CPU, where the speedup is never judged and the accuracy is) the timing
    shrinks all the way before the accuracy runs are given up; otherwise only its rounds do."""
    rounds = min(wanted.repeats, MIN_ROUNDS)
    timing = [(wanted.repeats, wanted.steps, wanted.sync_steps), (rounds, wanted.steps, wanted.sync_steps)]
    steps = wanted.steps
    while steps > 1:
        steps = max(1, steps // 2)
        timing.append((rounds, steps, wanted.sync_steps))
    if wanted.sync_steps > 1:
        timing.append((rounds, 1, 1))
    floor = min(wanted.repeats, FLOOR_ROUNDS)
    if floor < rounds:
        timing.append((floor, 1, 1))
    yield (*timing[0], "seeds")
    for rung in timing[1:] if accuracy_first else timing[1:2]:
        yield (*rung, "shorter")
    for rung in timing if accuracy_first else timing[1:]:
        yield (*rung, "none")


def plan_run(
    wanted: Wanted, costs: Mapping[str, ModeCosts], accuracy_modes: tuple[str, ...], seconds: float, cuda: bool,
) -> Plan:
    """The fullest plan whose estimate fits in `seconds` (times MARGIN). In order, as the time left
    shrinks: fewer accuracy seeds (down to two), fewer timed rounds (down to three), shorter accuracy
    runs (down to half), no accuracy runs, fewer steps per round, one sync-counting step, two rounds;
    on CPU (`cuda` False) the steps per round, sync steps and rounds shrink before the accuracy runs
    are given up. The smallest plan runs even when it does not fit; `over_budget` then says so."""
    room = MARGIN * seconds
    plan: Plan | None = None
    for rounds, steps, sync_steps, policy in _ladder(wanted, accuracy_first=not cuda):
        timing = timing_cost(costs, rounds, steps, sync_steps, cuda)
        choice = choose_accuracy(wanted.accuracy_seeds, wanted.accuracy_steps, costs, accuracy_modes, room - timing, policy)
        if policy != "none" and wanted.accuracy_seeds and accuracy_modes and not choice.seeds:
            continue
        needed = timing + accuracy_cost(costs, accuracy_modes, len(choice.seeds), choice.steps)
        plan = Plan(steps, rounds, max(rounds, wanted.max_rounds), sync_steps, choice.seeds, choice.steps,
                    _cuts(wanted, rounds, steps, sync_steps), choice.cut, needed)
        if needed <= room:
            return plan
    assert plan is not None
    over = (
        f"over budget: the smallest run ({plan.repeats} x {plan.steps} timed steps, {plan.sync_steps} sync-counting "
        f"step{'s' if plan.sync_steps > 1 else ''} and an evaluation per mode) needs about {plan.needed_s:.1f} s "
        f"after the warm-up, {max(0.0, seconds):.1f} s were left"
    )
    return replace(plan, max_rounds=plan.repeats, cuts=(*plan.cuts, over), over_budget=True)


def _cuts(wanted: Wanted, rounds: int, steps: int, sync_steps: int) -> tuple[str, ...]:
    cuts = []
    if rounds < wanted.repeats:
        cuts.append(f"timed rounds: {rounds} of {wanted.repeats}")
    if steps < wanted.steps:
        cuts.append(f"timed steps per round: {steps} of {wanted.steps}")
    if sync_steps < wanted.sync_steps:
        cuts.append(f"sync-counting steps: {sync_steps} of {wanted.sync_steps}")
    return tuple(cuts)


@dataclass
class Ledger:
    """The budget as the run spends it: the plan, the measured costs, and every cut made."""

    budget: TimeBudget
    cuda: bool
    costs: dict[str, ModeCosts] = field(default_factory=dict)
    cuts: list[str] = field(default_factory=list)
    plan: Plan | None = None
    reserved_after_timing_s: float = 0.0

    def cut(self, text: str) -> None:
        if text and text not in self.cuts:
            self.cuts.append(text)

    def make_plan(self, wanted: Wanted, accuracy_modes: tuple[str, ...]) -> Plan:
        """The plan after the warm-up; reserves what the phases after the timed rounds need. Its
        accuracy part is provisional: the accuracy runs are planned again, with measured costs."""
        self.plan = plan_run(wanted, self.costs, accuracy_modes, self.budget.remaining(), self.cuda)
        for text in self.plan.cuts:
            self.cut(text)
        rounds = self.plan.repeats * self.plan.steps * sum(cost.step_s for cost in self.costs.values())
        self.reserved_after_timing_s = self.plan.needed_s - rounds
        return self.plan

    def another_round_fits(self, round_s: float) -> bool:
        """Whether one more timed round still leaves what the later phases were promised."""
        return round_s + self.reserved_after_timing_s <= MARGIN * self.budget.remaining()

    def fits(self, seconds: float) -> bool:
        return seconds <= self.budget.remaining()

    def choose_accuracy(self, seeds: tuple[int, ...], steps: int | None, modes: tuple[str, ...]) -> AccuracyChoice:
        """The accuracy runs that fit in what is left now, from the costs measured so far."""
        return choose_accuracy(seeds, steps, self.costs, modes, MARGIN * self.budget.remaining())
