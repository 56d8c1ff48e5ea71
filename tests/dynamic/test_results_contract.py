"""results.py is the contract with the report renderer: stable keys, JSON-ready, round-trips."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from verifier.dynamic.results import (
    DeviceFacts,
    DynamicResult,
    Method,
    ModeResult,
    StepTiming,
    SyncSite,
    Verdict,
    VerdictStatus,
    Workload,
)


def sample_result() -> DynamicResult:
    return DynamicResult(
        workload=Workload("preset", "tiny", parameters=26944, tokens_per_step=1024),
        device=DeviceFacts("cpu", "Test CPU", nvml="no NVIDIA driver (NVML library not found)"),
        method=Method("perf_counter", warmup_steps=4, steps=3, repeats=2, sync_steps=2, eval_batches=4, seed=0),
        modes=(
            ModeResult(
                "fp32",
                "float32",
                step_time=StepTiming(10.0, 9.0, 12.0, 8.0, 13.0, (8.0, 13.0)),
                sync_sites=(SyncSite("train.py:12", "item", 2),),
            ),
            ModeResult("bf16", "bfloat16", error="loss became NaN or infinite during warm-up"),
        ),
        verdicts=(
            Verdict("speedup", "bf16", "AMP speedup over FP32 (bf16)", ">=", 1.5, "x", None, VerdictStatus.NOT_EVALUATED, "why"),
        ),
    )


def test_to_dict_is_json_ready_and_round_trips():
    result = sample_result()
    data = json.loads(json.dumps(result.to_dict()))
    assert DynamicResult.from_dict(data) == result


def test_seeded_accuracy_runs_and_a_memory_split_round_trip():
    from verifier.dynamic.results import AccuracyRun, MemorySplit

    split = MemorySplit(100, 10, 10, 20, 60, estimated=True, method="FakeTensorMode")
    result = dataclasses.replace(
        sample_result(),
        method=dataclasses.replace(sample_result().method, accuracy_steps=60, accuracy_seeds=(0, 1, 2)),
        modes=(
            dataclasses.replace(
                sample_result().modes[0], memory_split=split, accuracy=0.8,
                accuracy_runs=(AccuracyRun(0, 0.8, 1.5, 3.4, 1.5), AccuracyRun(1, error="boom")),
            ),
        ),
        verdicts=(dataclasses.replace(sample_result().verdicts[0], band=(-0.01, 0.02)),),
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert data["schema_version"] == 2
    assert DynamicResult.from_dict(data) == result
    assert result.fingerprint["accuracy_steps"] == 60 and result.fingerprint["accuracy_seeds"] == 3


def test_top_level_keys_are_stable():
    assert list(sample_result().to_dict()) == [
        "workload",
        "device",
        "method",
        "thresholds",
        "fp32_baseline",
        "modes",
        "verdicts",
        "overhead_bound",
        "overhead_note",
        "chart_path",
        "chart_note",
        "error",
        "schema_version",
        "role",
        "failure",
        "fingerprint",
    ]


def test_mode_keys_carry_every_figure_the_report_needs():
    keys = set(sample_result().to_dict()["modes"][0])
    assert {
        "mode",
        "dtype",
        "step_time",
        "tokens_per_second",
        "peak_memory_bytes",
        "memory_method",
        "eval_loss",
        "accuracy",
        "user_syncs_per_step",
        "library_syncs_per_step",
        "sync_sites",
        "mfu",
        "error",
    } <= keys


def test_enums_and_derived_spread_are_serialised_plainly():
    data = sample_result().to_dict()
    assert data["verdicts"][0]["status"] == "NOT_EVALUATED"
    assert data["modes"][0]["step_time"]["iqr_ms"] == 3.0
    assert data["modes"][1]["step_time"] is None


def test_results_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        sample_result().modes[0].accuracy = 1.0  # type: ignore[misc]


def test_importing_the_contract_does_not_import_torch():
    import subprocess

    code = "import sys, verifier.dynamic.results; print('torch' in sys.modules)"
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert finished.stdout.strip() == "False"


ADAMW_SITE = SyncSite(
    "train.py:30", "item", 6, call="AdamW.step", operation="reads the per-parameter step counter (state['step'].item())",
    library="torch.optim", on_cuda=False, cuda_note="a host tensor on CUDA",
)


def test_named_library_sites_and_the_budget_round_trip_and_print():
    from verifier.dynamic.summary import format_summary
    from verifier.report.dynamic_view import library_sync_lines

    base = sample_result()
    fp32 = dataclasses.replace(base.modes[0], library_syncs_per_step=3.0, library_sync_sites=(ADAMW_SITE,))
    result = dataclasses.replace(
        base, modes=(fp32, base.modes[1]),
        method=dataclasses.replace(base.method, time_budget_s=4.0, elapsed_s=3.9, budget_cuts=("timed rounds: 3 of 5",)),
    )
    assert DynamicResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    lines = format_summary(result).splitlines()
    assert lines[2:4] == ["time budget: 4 s, 3.9 s used; cut to fit:", "  timed rounds: 3 of 5"]
    assert (
        "  fp32: train.py:30 AdamW.step (torch.optim): reads the per-parameter step counter (state['step'].item()) "
        "x6, 3 per step; on CUDA: no sync (a host tensor on CUDA)"
    ) in lines
    assert library_sync_lines(result) == [(
        "FP32: `train.py:30` AdamW.step (torch.optim): reads the per-parameter step counter (state['step'].item()) "
        "x6, 3 per step; on CUDA: no sync (a host tensor on CUDA)"
    )]
