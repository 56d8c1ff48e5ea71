"""Failures become result content with a reason, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from verifier.dynamic.harness import HarnessOptions, run_harness
from verifier.dynamic.results import VerdictStatus
from verifier.dynamic.workload import PresetRun

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = {"warmup": 2, "steps": 2, "repeats": 2, "max_repeats": 2, "sync_steps": 1, "accuracy_steps": 2, "accuracy_seeds": 2, "device": "cpu", "modes": ("fp32", "bf16")}


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ("no_such_module:make", "entry not found: cannot import 'no_such_module' (No module named 'no_such_module')"),
        ("entry_points:nope", "entry not found: module 'entry_points' has no attribute 'nope'"),
        ("entry_points:NOT_CALLABLE", "entry 'entry_points:NOT_CALLABLE' is not callable"),
        ("entry_points", "entry 'entry_points' is not of the form package.module:function"),
    ],
)
def test_entry_that_cannot_be_loaded(entry_fixtures, entry, error):
    result = run_harness(HarnessOptions(entry=entry, **FAST))
    assert result.error == error
    assert result.modes == ()
    assert result.workload.source == "entry"
    assert {v.status for v in result.verdicts} == {VerdictStatus.NOT_EVALUATED}
    assert {v.reason for v in result.verdicts} == {f"not measured: {error}"}


def test_entry_that_raises(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:raises_on_call", **FAST))
    line = line_of(entry_fixtures / "entry_points.py", 'raise ValueError("no dataset')
    assert [m.error for m in result.modes] == [f"setup raised ValueError: no dataset at /data/train (at entry_points.py:{line})"] * 2
    assert all(m.step_time is None for m in result.modes)


def test_entry_with_an_incomplete_contract(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:returns_nothing_useful", **FAST))
    # loss_fn is no longer required: a model may compute its own loss.
    assert result.modes[0].error == (
        "entry 'entry_points:returns_nothing_useful' returned dict without optimizer, make_batch or batches: "
        "give either train_step, or model, optimizer, make_batch/batches (and loss_fn or forward)"
    )


def test_nan_loss(entry_fixtures):
    result = run_harness(HarnessOptions(entry="entry_points:nan_loss", **FAST))
    assert [m.error for m in result.modes] == ["loss became NaN or infinite during warm-up"] * 2
    assert {v.status for v in result.verdicts} == {VerdictStatus.NOT_EVALUATED}


def test_simulated_cuda_out_of_memory_fails_only_that_mode(monkeypatch):
    real_step = PresetRun.step

    def step(self):
        if self.session.precision.mode == "bf16":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB\nmore detail")
        return real_step(self)

    monkeypatch.setattr(PresetRun, "step", step)
    result = run_harness(HarnessOptions(preset="tiny", **FAST))
    fp32, bf16 = result.modes
    assert fp32.error is None and fp32.step_time is not None
    assert bf16.error == "CUDA out of memory during warm-up: CUDA out of memory. Tried to allocate 20.00 GiB"
    accuracy = next(v for v in result.verdicts if v.name == "accuracy_degradation")
    assert accuracy.status is VerdictStatus.NOT_EVALUATED
    assert accuracy.reason == f"accuracy not measured: bf16 failed: {bf16.error}"


def test_out_of_memory_mid_timing_keeps_warm_up_figures(monkeypatch):
    real_step = PresetRun.step
    calls = {"count": 0}

    def step(self):
        calls["count"] += 1
        if calls["count"] > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_step(self)

    monkeypatch.setattr(PresetRun, "step", step)
    result = run_harness(HarnessOptions(preset="tiny", **{**FAST, "modes": ("fp32",)}))
    only = result.modes[0]
    assert only.error == "CUDA out of memory during timed steps: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert only.train_loss_first is not None and only.step_time is None


def test_no_nvml_is_a_device_fact_not_a_failure(entry_fixtures, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    result = run_harness(HarnessOptions(entry="entry_points:components", **FAST))
    assert result.device.nvml == "pynvml is not installed (pip install nvidia-ml-py)"
    assert result.error is None and all(m.error is None for m in result.modes)
