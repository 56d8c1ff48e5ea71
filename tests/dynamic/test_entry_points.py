"""User entry points are measured the same way as the reference, in both contract forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifier.dynamic.entry import EntryError, describe_exception, load_entry
from verifier.dynamic.harness import HarnessOptions, run_harness

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = {"warmup": 3, "steps": 2, "repeats": 2, "max_repeats": 2, "sync_steps": 2, "accuracy_steps": 3, "accuracy_seeds": 2, "device": "cpu", "modes": ("fp32", "bf16")}


def test_components_form_is_stepped_like_the_reference(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:components", **FAST))
    assert result.workload.name == "entry_points:components"
    assert result.workload.description == "A 4-way classifier given as components: the harness writes the step."
    for mode in result.modes:
        assert mode.error is None
        assert mode.user_syncs_per_step == 0.0
        assert mode.tokens_per_second == pytest.approx(64 / (mode.step_time.median_ms / 1000))
        assert 0.0 <= mode.accuracy <= 1.0
        assert mode.eval_loss > 0
    assert result.method.eval_batches is None


def test_step_form_exposes_the_users_per_step_item(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:item_every_step", **FAST))
    item_line = next(n for n, line in enumerate((entry_fixtures / "bad_step.py").read_text().splitlines(), 1) if "return loss.item()" in line)
    for mode in result.modes:
        assert mode.error is None
        assert mode.user_syncs_per_step == 1.0
        assert [(s.kind, s.count) for s in mode.sync_sites] == [("item", 2)]
        assert mode.sync_sites[0].location.endswith(f"bad_step.py:{item_line}")
        assert mode.accuracy is None  # the entry gives no evaluate()
    accuracy = next(v for v in result.verdicts if v.name == "accuracy_degradation")
    assert accuracy.reason == "accuracy not measured: the workload reports no accuracy"


def test_load_entry_finds_nested_attributes(entry_fixtures):
    assert load_entry("entry_points:components").__name__ == "components"
    with pytest.raises(EntryError, match="has no attribute"):
        load_entry("entry_points:components.missing")


def test_exception_description_names_the_user_frame():
    def user_code():
        raise KeyError("batch")

    try:
        user_code()
    except KeyError as error:
        line = user_code.__code__.co_firstlineno + 1
        assert describe_exception(error) == f"KeyError: 'batch' (at {Path(__file__).name}:{line})"
