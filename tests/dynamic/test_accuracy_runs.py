"""The accuracy comes from seeded, fixed-length, untimed runs, apart from the timed run."""

from __future__ import annotations

import pytest
import torch

from verifier.dynamic.accuracy import AccuracyPlan, measure_accuracy, with_accuracy_runs
from verifier.dynamic.harness import HarnessOptions, run_harness
from verifier.dynamic.results import AccuracyRun, ModeResult, VerdictStatus

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = {"warmup": 1, "steps": 2, "repeats": 2, "max_repeats": 2, "sync_steps": 1, "device": "cpu", "modes": ("fp32", "bf16")}


def accuracy_verdict(result):
    return next(v for v in result.verdicts if v.name == "accuracy_degradation")


def test_components_are_rebuilt_per_seed_for_the_entrys_own_length(entry_fixtures):
    import entry_points

    entry_points.SEEDS_SEEN.clear()
    result = run_harness(HarnessOptions(entry="entry_points:seed_recording", seed=7, **FAST))
    # A run per timed mode (seed 7), one fresh run per mode and seed, then a memory-estimate build per mode.
    assert entry_points.SEEDS_SEEN == [7, 7] + [7, 7, 8, 8, 9, 9] + [7, 7]
    assert (result.method.accuracy_steps, result.method.accuracy_seeds) == (4, (7, 8, 9))
    for mode in result.modes:
        assert [run.seed for run in mode.accuracy_runs] == [7, 8, 9]
        assert all(run.error is None and 0.0 <= run.accuracy <= 1.0 for run in mode.accuracy_runs)
        assert mode.accuracy == pytest.approx(sum(run.accuracy for run in mode.accuracy_runs) / 3)
        assert mode.accuracy_note == "mean of 3 seeded runs of 4 steps each (seeds 7, 8, 9)"
    fp32, bf16 = result.modes
    differences = [a.accuracy - b.accuracy for a, b in zip(fp32.accuracy_runs, bf16.accuracy_runs)]
    assert accuracy_verdict(result).band == (min(differences), max(differences))


def test_the_accuracy_does_not_change_with_the_timed_steps(entry_fixtures):
    short = run_harness(HarnessOptions(entry="entry_points:components", accuracy_steps=5, accuracy_seeds=2, **FAST))
    longer = run_harness(HarnessOptions(
        entry="entry_points:components", accuracy_steps=5, accuracy_seeds=2,
        **{**FAST, "warmup": 6, "steps": 4, "repeats": 3, "max_repeats": 3},
    ))
    assert [m.train_loss_last for m in short.modes] != [m.train_loss_last for m in longer.modes]
    assert [m.accuracy_runs for m in short.modes] == [m.accuracy_runs for m in longer.modes]
    assert [m.accuracy for m in short.modes] == [m.accuracy for m in longer.modes]


def test_the_step_form_keeps_its_one_run_and_is_never_judged(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:step_with_evaluate", **FAST))
    for mode in result.modes:
        assert (mode.accuracy, mode.accuracy_runs, mode.accuracy_band) == (0.7, (), None)
        assert mode.accuracy_note == "one run, no band: the timed run's own evaluation (the step form cannot be re-created per seed)"
    assert (result.method.accuracy_steps, result.method.accuracy_seeds) == (None, ())
    verdict = accuracy_verdict(result)
    assert verdict.status is VerdictStatus.NOT_EVALUATED
    assert verdict.reason.startswith("not judged: one run, no band (FP32 0.7000 - bf16 0.7000 = +0.0000)")


def test_no_accuracy_seeds_falls_back_to_the_timed_run_labelled_so(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:components", accuracy_seeds=0, **FAST))
    assert {m.accuracy_note for m in result.modes} == {"one run, no band: the timed run's own evaluation (--accuracy-seeds 0)"}
    assert all(m.accuracy_runs == () for m in result.modes)
    assert accuracy_verdict(result).status is VerdictStatus.NOT_EVALUATED


class FakeRun:
    """Losses and accuracy scripted per (mode, seed); a NaN loss for bf16 seed 1."""

    def __init__(self, mode: str, seed: int) -> None:
        self.mode, self.seed, self.calls = mode, seed, 0

    def step(self) -> torch.Tensor:
        self.calls += 1
        if self.mode == "bf16" and self.seed == 1:
            return torch.tensor(float("nan"))
        return torch.tensor(4.0 - self.calls * 0.1)

    def evaluate(self) -> tuple[float, float]:
        return 0.5, 0.8 - 0.01 * self.seed

    def close(self) -> None:
        pass


class FakeWorkload:
    def __init__(self) -> None:
        self.opened: list[tuple[str, int]] = []

    def accuracy_run(self, mode: str, device: torch.device, seed: int) -> FakeRun:
        self.opened.append((mode, seed))
        return FakeRun(mode, seed)


def test_runs_go_seed_by_seed_and_a_failed_run_keeps_its_error():
    workload, progress = FakeWorkload(), []
    plan = AccuracyPlan(steps=20, seeds=(0, 1))
    runs, ran = measure_accuracy(workload, ("fp32", "bf16"), torch.device("cpu"), plan, lambda *event: progress.append(event))
    assert ran == plan
    assert workload.opened == [("fp32", 0), ("bf16", 0), ("fp32", 1), ("bf16", 1)]
    # First and last tenth of 20 steps: losses 3.9, 3.8 and 2.1, 2.0.
    assert runs["fp32"] == (AccuracyRun(0, 0.8, 0.5, pytest.approx(3.85), pytest.approx(2.05)),
                            AccuracyRun(1, 0.79, 0.5, pytest.approx(3.85), pytest.approx(2.05)))
    assert runs["bf16"][1] == AccuracyRun(1, error="loss became NaN or infinite during the accuracy run")
    assert progress[-1] == ("bf16", "accuracy, seed 1", 40, 40)
    bf16 = with_accuracy_runs(ModeResult("bf16", "bfloat16", accuracy=0.1), runs["bf16"], plan)
    assert bf16.accuracy == 0.8  # the mean of the runs that measured; the failure is in the note
    assert bf16.accuracy_note == (
        "mean of 2 seeded runs of 20 steps each (seeds 0, 1); failed: seed 1: loss became NaN or infinite during the accuracy run"
    )


def test_a_workload_that_cannot_be_reseeded_gives_no_runs():
    class StepOnly:
        def accuracy_run(self, mode, device, seed):
            return None

    assert measure_accuracy(StepOnly(), ("fp32",), torch.device("cpu"), AccuracyPlan(5, (0, 1)), lambda *e: None)[0] is None
    assert measure_accuracy(object(), ("fp32",), torch.device("cpu"), AccuracyPlan(5, (0, 1)), lambda *e: None)[0] is None
