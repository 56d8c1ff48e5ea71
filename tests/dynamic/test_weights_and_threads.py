"""Same starting weights are checked, not asserted; --threads caps CPU runs, entries included."""

from __future__ import annotations

import pytest

from verifier.dynamic.harness import HarnessOptions, HarnessUsageError, run_harness

FAST = {"device": "cpu", "modes": ("fp32", "bf16"), "warmup": 1, "steps": 2, "repeats": 2, "sync_steps": 1}


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
    assert result.method.notes[1].endswith("1 intra-op CPU thread(s) (--threads)")
    assert torch.get_num_threads() == before


def test_threads_below_one_are_refused(entry_fixtures):
    with pytest.raises(HarnessUsageError, match="--threads must be at least 1"):
        run_harness(HarnessOptions(entry="entry_points:components", threads=0, **FAST))
