"""The whole run's time budget: the plan fits whatever the budget, and says what it cut.

The planner is checked on its own over many budgets and step costs; the whole harness is then run
on a fake clock (tests/dynamic/fixtures/clocked.py: every forward pass costs a set time), so that
the elapsed time it reports is exact and the same on every machine.
"""

from __future__ import annotations

import random

import pytest

from verifier.dynamic.budget import (
    FLOOR_ROUNDS,
    MARGIN,
    MIN_ACCURACY_SEEDS,
    ModeCosts,
    TimeBudget,
    Wanted,
    accuracy_cost,
    plan_run,
    timing_cost,
)
from verifier.dynamic.harness import HarnessOptions, HarnessUsageError, run_harness
from verifier.dynamic.results import VerdictStatus

pytestmark = pytest.mark.usefixtures("one_thread")

ASKED = {"warmup": 5, "steps": 10, "repeats": 5, "sync_steps": 3, "accuracy_seeds": 3}


def random_case(draw: random.Random) -> tuple[Wanted, dict[str, ModeCosts], float, bool]:
    modes = draw.choice([("fp32", "bf16"), ("fp32", "tf32", "fp16", "bf16")])
    costs = {
        mode: ModeCosts(setup_s=draw.uniform(0.0, 2.0), step_s=draw.uniform(0.001, 1.0),
                        eval_s=draw.choice([None, draw.uniform(0.0, 1.0)]))
        for mode in modes
    }
    seeds = tuple(range(draw.randint(0, 5)))
    wanted = Wanted(draw.randint(1, 20), draw.randint(1, 8), 20, draw.randint(1, 4), seeds, draw.randint(1, 300) if seeds else None)
    return wanted, costs, draw.uniform(0.0, 400.0), draw.random() < 0.5


def test_the_plan_fits_any_budget_or_is_the_smallest_and_says_so():
    draw = random.Random(27)
    seen = set()
    for _ in range(2000):
        wanted, costs, seconds, cuda = random_case(draw)
        plan = plan_run(wanted, costs, tuple(costs), seconds, cuda)
        needed = timing_cost(costs, plan.repeats, plan.steps, plan.sync_steps, cuda)
        needed += accuracy_cost(costs, tuple(costs), len(plan.accuracy_seeds), plan.accuracy_steps)
        assert needed == pytest.approx(plan.needed_s)
        seen.add((plan.over_budget, bool(plan.cuts), bool(plan.accuracy_seeds)))
        if plan.over_budget:
            assert needed > MARGIN * seconds
            assert (plan.repeats, plan.steps, plan.sync_steps, plan.accuracy_seeds) == (
                min(wanted.repeats, FLOOR_ROUNDS), 1, 1, ())
            assert plan.cuts[-1].startswith("over budget: the smallest run (")
        else:
            assert needed <= MARGIN * seconds
        # Every count below what was asked has its sentence.
        assert (plan.repeats < wanted.repeats) == any(c.startswith("timed rounds: ") for c in plan.cuts)
        assert (plan.steps < wanted.steps) == any(c.startswith("timed steps per round: ") for c in plan.cuts)
        assert (plan.sync_steps < wanted.sync_steps) == any(c.startswith("sync-counting steps: ") for c in plan.cuts)
        cut_accuracy = plan.accuracy_seeds != wanted.accuracy_seeds or plan.accuracy_steps != wanted.accuracy_steps
        assert cut_accuracy == plan.accuracy_cut.startswith("accuracy runs: ")
        # Fewer than two seeds give no band: the plan then makes no accuracy runs at all.
        assert len(plan.accuracy_seeds) in (0, len(wanted.accuracy_seeds)) or len(plan.accuracy_seeds) >= MIN_ACCURACY_SEEDS
    # The cases cover every outcome: over budget, cut to fit, fitting whole, with and without accuracy runs.
    assert seen >= {(True, True, False), (False, True, True), (False, True, False), (False, False, True), (False, False, False)}


COSTS = {"fp32": ModeCosts(0.0, 0.01, 0.0), "bf16": ModeCosts(0.0, 0.01, 0.0)}
WANTED = Wanted(10, 5, 5, 1, (0, 1, 2), 100)
MODES = ("fp32", "bf16")
SLACK = 0.001


def accuracy(seeds: int, steps: int) -> float:
    return accuracy_cost(COSTS, MODES, seeds, steps)


def test_on_cuda_seeds_go_before_timed_rounds_and_shorter_runs_before_none():
    five, three = timing_cost(COSTS, 5, 10, 1, True), timing_cost(COSTS, 3, 10, 1, True)
    assert plan_run(WANTED, COSTS, MODES, (five + accuracy(3, 100) + SLACK) / MARGIN, True).cuts == ()
    two_seeds = plan_run(WANTED, COSTS, MODES, (five + accuracy(2, 100) + SLACK) / MARGIN, True)
    assert (two_seeds.repeats, two_seeds.accuracy_seeds, two_seeds.accuracy_cut) == (
        5, (0, 1), "accuracy runs: 2 of 3 seeds (100 steps each)")
    fewer_rounds = plan_run(WANTED, COSTS, MODES, (three + accuracy(2, 100) + SLACK) / MARGIN, True)
    assert (fewer_rounds.repeats, fewer_rounds.accuracy_seeds, fewer_rounds.accuracy_steps) == (3, (0, 1), 100)
    assert fewer_rounds.cuts == ("timed rounds: 3 of 5",)
    shorter = plan_run(WANTED, COSTS, MODES, (three + accuracy(2, 50) + SLACK) / MARGIN, True)
    assert (shorter.accuracy_seeds, shorter.accuracy_steps, shorter.accuracy_cut) == (
        (0, 1), 50, "accuracy runs: 2 of 3 seeds, 50 of 100 steps each")
    none = plan_run(WANTED, COSTS, MODES, (three + 1.0) / MARGIN, True)
    assert (none.repeats, none.steps, none.accuracy_seeds) == (3, 10, ())
    assert none.accuracy_cut == (
        f"accuracy runs: none of the 3 seeds x 100 steps asked for (the smallest useful set needs about "
        f"{accuracy(2, 50):.1f} s, 1.0 s were left)"
    )


def test_on_cpu_the_timing_shrinks_before_the_accuracy_runs_are_given_up():
    # Two seeds of 50 steps still fit beside 3 rounds of 2 steps and the sync pass, not of 5 steps.
    small = timing_cost(COSTS, 3, 2, 1, False)
    assert timing_cost(COSTS, 3, 5, 1, False) + accuracy(2, 50) > small + accuracy(2, 50) + SLACK
    kept = plan_run(WANTED, COSTS, MODES, (small + accuracy(2, 50) + SLACK) / MARGIN, False)
    assert (kept.repeats, kept.steps, kept.accuracy_seeds, kept.accuracy_steps) == (3, 2, (0, 1), 50)
    assert kept.cuts == ("timed rounds: 3 of 5", "timed steps per round: 2 of 10")
    # Not even the smallest timing leaves room for them: the timing then gets all it asked for.
    full = timing_cost(COSTS, 5, 10, 1, False)
    none = plan_run(WANTED, COSTS, MODES, (full + 0.5) / MARGIN, False)
    assert (none.repeats, none.steps, none.accuracy_seeds, none.cuts) == (5, 10, (), ())


def test_a_budget_counts_from_its_start_and_keeps_the_chart_reserve():
    now = [10.0]
    budget = TimeBudget(5.0, lambda: now[0], started=8.0, reserve_s=1.0)
    assert (budget.elapsed(), budget.remaining()) == (2.0, 2.0)
    now[0] = 13.5
    assert budget.remaining() == -1.5 and budget.warmup_allowance(2) == 0.0


@pytest.fixture
def clocked(entry_fixtures):
    import clocked

    def run(seconds: float, **options):
        clocked.CLOCK.now = 100.0
        result = run_harness(
            HarnessOptions(entry="clocked:costed", device="cpu", modes=("fp32", "bf16"), threads=1,
                           time_budget_s=seconds, **{**ASKED, **options}),
            clock=clocked.CLOCK,
        )
        return result, clocked.CLOCK.now - 100.0

    return run


def accuracy_verdict(result):
    return next(v for v in result.verdicts if v.name == "accuracy_degradation")


@pytest.mark.parametrize("seconds", [2.5, 4.0, 6.0])
def test_the_whole_run_fits_its_budget_and_reports_each_cut(clocked, seconds):
    result, elapsed = clocked(seconds)
    method = result.method
    assert elapsed <= seconds
    assert (method.time_budget_s, method.elapsed_s) == (seconds, pytest.approx(elapsed, abs=1e-3))
    assert method.budget_cuts and not any(cut.startswith("over budget") for cut in method.budget_cuts)
    assert (method.repeats < 5) == any(cut.startswith("timed rounds: ") for cut in method.budget_cuts)
    assert (method.steps < 10) == any(cut.startswith("timed steps per round: ") for cut in method.budget_cuts)
    assert any(cut.startswith("accuracy runs: ") for cut in method.budget_cuts)
    assert f"time budget {seconds:g} s for the whole run" in method.notes[5]
    assert accuracy_verdict(result).reason.endswith(
        "; cut by the time budget: " + next(c for c in method.budget_cuts if c.startswith("accuracy runs: ")))
    assert all(mode.step_time is not None and mode.error is None for mode in result.modes)


@pytest.mark.parametrize(("seconds", "cut"), [
    (4.0, "accuracy runs: 2 of 3 seeds, 10 of 20 steps each"),
    (8.0, "accuracy runs: 2 of 3 seeds (20 steps each)"),
])
def test_a_budget_that_keeps_two_seeds_says_so_in_the_verdict(clocked, seconds, cut):
    result, _ = clocked(seconds)
    assert result.method.accuracy_seeds == (0, 1) and cut in result.method.budget_cuts
    verdict = accuracy_verdict(result)
    assert verdict.status in (VerdictStatus.PASS, VerdictStatus.UNSTABLE, VerdictStatus.MISS) and verdict.band is not None
    assert verdict.reason.endswith(f"; cut by the time budget: {cut}")
    for mode in result.modes:
        assert mode.accuracy_note.endswith(f"; cut by the time budget: {cut}")


def test_a_budget_that_leaves_no_accuracy_runs_says_one_run_and_why(clocked):
    result, _ = clocked(2.5)
    assert (result.method.accuracy_steps, result.method.accuracy_seeds) == (None, ())
    assert {m.accuracy_note for m in result.modes} == {
        "one run, no band: the timed run's own evaluation (the time budget left no time for the seeded runs)"}
    verdict = accuracy_verdict(result)
    assert verdict.status is VerdictStatus.NOT_EVALUATED and verdict.reason.startswith("not judged: one run, no band")
    assert "; cut by the time budget: accuracy runs: none of the 3 seeds x 20 steps asked for" in verdict.reason


def test_enough_budget_cuts_nothing(clocked):
    result, elapsed = clocked(30.0)
    method = result.method
    assert method.budget_cuts == ()
    assert (method.warmup_steps, method.repeats, method.steps, method.sync_steps) == (5, 5, 10, 3)
    assert (method.accuracy_seeds, method.accuracy_steps) == ((0, 1, 2), 20)
    assert all(mode.memory_split is not None for mode in result.modes)
    assert elapsed <= 30.0 and method.notes[5].endswith("nothing cut")


def test_a_budget_below_the_smallest_run_runs_it_and_says_over_budget(clocked):
    result, elapsed = clocked(0.3)
    method = result.method
    assert elapsed > 0.3
    assert (method.repeats, method.steps, method.sync_steps, method.accuracy_seeds) == (2, 1, 1, ())
    over = next(cut for cut in method.budget_cuts if cut.startswith("over budget: "))
    assert over.startswith("over budget: the smallest run (2 x 1 timed steps, 1 sync-counting step and an evaluation per mode) needs about ")
    assert all(mode.step_time is not None for mode in result.modes)


@pytest.mark.parametrize("seconds", [-1.0, 0.0, float("nan"), float("inf")])
def test_a_budget_that_is_no_number_of_seconds_is_a_usage_error(seconds):
    with pytest.raises(HarnessUsageError, match="--time-budget must be a finite number of seconds above 0"):
        run_harness(HarnessOptions(preset="tiny", device="cpu", time_budget_s=seconds))


def test_the_reference_baseline_on_cuda_is_tf32_and_strict_fp32_gets_no_accuracy_runs():
    import torch

    from verifier.dynamic.harness import _accuracy_modes, _baseline
    from verifier.dynamic.workload import PresetWorkload
    from verifier.reference_impl.presets import get_preset

    workload, cuda = PresetWorkload(get_preset("tiny")), torch.device("cuda")  # no device needed: names only
    every = ("fp32", "tf32", "fp16", "bf16")
    assert _baseline(workload, cuda, every) == "tf32"
    assert _baseline(workload, cuda, ("fp32", "bf16")) == "fp32"  # tf32 not asked for: strict is the baseline
    assert _baseline(workload, torch.device("cpu"), ("fp32", "bf16")) == "fp32"
    assert _accuracy_modes(workload, every, "tf32") == ("tf32", "fp16", "bf16")
    assert _accuracy_modes(workload, ("fp32", "bf16"), "fp32") == ("fp32", "bf16")
