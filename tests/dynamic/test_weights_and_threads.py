"""Same starting weights are checked, not asserted; --threads caps CPU runs, entries included."""

from __future__ import annotations

import pytest

from verifier.dynamic.harness import HarnessOptions, HarnessUsageError, run_harness

FAST = {"device": "cpu", "modes": ("fp32", "bf16"), "warmup": 1, "steps": 2, "repeats": 2, "max_repeats": 2, "sync_steps": 1, "accuracy_seeds": 0}


def test_components_with_fresh_weights_are_verified(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:components", threads=1, **FAST))
    prints = {m.weights_fingerprint for m in result.modes}
    assert len(prints) == 1 and len(next(iter(prints))) == 64
    assert result.method.notes[0] == f"same starting weights in every mode: verified (state_dict fingerprint {next(iter(prints))[:12]})"


def test_a_module_level_model_is_caught_starting_from_other_weights(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:module_level_model", threads=1, **FAST))
    fp32, bf16 = (m.weights_fingerprint for m in result.modes)
    assert fp32 != bf16
    assert result.method.notes[0] == (
        f"starting weights DIFFER between modes (state_dict fingerprints fp32 {fp32[:12]}, bf16 {bf16[:12]}): "
        "the modes are not comparable"
    )


def test_the_step_form_says_not_verified(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:item_every_step", threads=1, **FAST))
    assert result.method.notes[0] == "same starting weights in every mode: not verified (the step form names no model)"


def test_threads_cap_an_entry_and_are_restored(entry_fixtures):
    import torch

    before = torch.get_num_threads()
    result = run_harness(HarnessOptions(entry="entry_points:components", threads=1, **FAST))
    assert result.device.cpu_threads == 1
    assert result.method.notes[2].endswith("1 intra-op CPU thread(s) (--threads)")
    assert torch.get_num_threads() == before


def test_threads_below_one_are_refused(entry_fixtures):
    with pytest.raises(HarnessUsageError, match="--threads must be at least 1"):
        run_harness(HarnessOptions(entry="entry_points:components", threads=0, **FAST))


def test_modes_are_timed_round_robin(entry_fixtures, monkeypatch):
    import verifier.dynamic.measure as measure

    order = []
    original = measure.ModeSession.time_repeat
    monkeypatch.setattr(measure.ModeSession, "time_repeat", lambda self: (order.append(self.mode), original(self))[1])
    run_harness(HarnessOptions(entry="entry_points:components", threads=1, **{**FAST, "repeats": 3, "max_repeats": 3}))
    assert order == ["fp32", "bf16"] * 3


def test_noisy_timing_adds_rounds_up_to_the_limit(entry_fixtures, monkeypatch):
    import verifier.dynamic.measure as measure

    # Step times that jump between 1 and 9 ms: the speedup interval never tightens.
    times = iter([1.0, 9.0, 9.0, 1.0] * 10)
    monkeypatch.setattr(measure, "time_span", lambda run, device, clock: (run(), next(times) * 2)[1])
    result = run_harness(HarnessOptions(entry="entry_points:components", threads=1, **{**FAST, "repeats": 2, "max_repeats": 5}))
    assert [len(m.step_time.samples_ms) for m in result.modes] == [5, 5]
    assert result.method.repeats == 5


def test_on_cpu_no_rounds_are_added_unless_max_repeats_asks(entry_fixtures, monkeypatch):
    import verifier.dynamic.measure as measure

    # The noisy times that add rounds up to --max-repeats above: on CPU the speedup is never
    # judged, so by default the harness stops at --repeats.
    times = iter([1.0, 9.0, 9.0, 1.0] * 10)
    monkeypatch.setattr(measure, "time_span", lambda run, device, clock: (run(), next(times) * 2)[1])
    options = {key: value for key, value in FAST.items() if key != "max_repeats"}
    result = run_harness(HarnessOptions(entry="entry_points:components", threads=1, **{**options, "repeats": 2}))
    assert [len(m.step_time.samples_ms) for m in result.modes] == [2, 2]
    assert result.method.repeats == 2


def test_steady_timing_stops_at_the_minimum(entry_fixtures, monkeypatch):
    import verifier.dynamic.measure as measure

    times = iter([4.0, 2.0, 4.0, 2.0, 4.01, 2.0] + [4.0, 2.0] * 10)
    monkeypatch.setattr(measure, "time_span", lambda run, device, clock: (run(), next(times) * 2)[1])
    result = run_harness(HarnessOptions(entry="entry_points:components", threads=1, **{**FAST, "repeats": 3, "max_repeats": 8}))
    assert result.method.repeats == 3


def test_fp32_runs_strict_and_tf32_with_tensor_cores_and_the_setting_is_restored():
    import torch

    from verifier.dynamic.measure import matmul_precision

    cuda = torch.device("cuda")  # only the flags are touched: no device is needed
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    seen = {}
    for name in ("fp32", "tf32", "bf16"):
        with matmul_precision(name, cuda):
            seen[name] = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
    assert seen["fp32"] == (False, False) and seen["tf32"] == (True, True) and seen["bf16"] == before


def test_the_fp32_baseline_is_the_configuration_the_code_uses():
    import torch

    from verifier.dynamic.harness import fp32_baseline, resolve_modes

    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        assert fp32_baseline(torch.device("cuda")) == "fp32"
        torch.set_float32_matmul_precision("high")
        assert fp32_baseline(torch.device("cuda")) == "tf32"
        assert fp32_baseline(torch.device("cpu")) == "fp32"
    finally:
        torch.set_float32_matmul_precision(previous)
    with pytest.raises(HarnessUsageError, match="mode tf32 needs a CUDA device"):
        resolve_modes(("fp32", "tf32"), torch.device("cpu"))
    assert resolve_modes(None, torch.device("cuda")) == ("fp32", "tf32", "fp16", "bf16")


def test_the_step_form_is_not_traced_for_a_memory_estimate(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:item_every_step", threads=1, **FAST))
    assert [(m.memory_split, m.memory_split_note) for m in result.modes] == [
        (None, "not estimated: the step form names no model and optimizer")
    ] * 2
    assert result.method.notes[1] == (
        "timed repeats interleaved round-robin across modes; 2 rounds run (at least 2, more while a speedup's "
        "95% interval is wider than +/-5%, up to 2 rounds, while the time budget lasts)"
    )
