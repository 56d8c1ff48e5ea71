"""Builders for report tests: findings, reports and harness results without running anything."""

from __future__ import annotations

import pytest

from verifier.config import Settings
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
from verifier.findings import Category, Finding, Heat, Severity
from verifier.report.model import RunInfo, build_report

CATEGORY_OF_CODE = {"VP1": Category.DATA, "VP2": Category.SYNC, "VP3": Category.AMP, "VP4": Category.MEMORY}


def make_finding(code="VP201", line=10, severity=Severity.MEDIUM, path="train.py", source="    x = loss.item()", **extra):
    return Finding(
        path=path,
        line=line,
        column=5,
        code=code,
        end_line=line,
        end_column=20,
        name=extra.pop("name", "sync-in-hot-loop"),
        severity=severity,
        category=extra.pop("category", CATEGORY_OF_CODE.get(code[:3], Category.ANALYSIS)),
        heat=extra.pop("heat", Heat.STEP),
        message=extra.pop("message", "`.item()` of `loss` in the per-step loop waits for the device every step"),
        source=source,
        fix=extra.pop("fix", "Accumulate on the device and read once per epoch."),
        evidence=extra.pop("evidence", ()),
    )


def make_report(findings=(), settings=None, **kwargs):
    run = RunInfo(task="T001", date="2026-01-01", paths=("train.py",), command="verify-perf train.py --task T001 --date 2026-01-01")
    return build_report(run, ["train.py"], list(findings), settings or Settings(), **kwargs)


def timing(median):
    return StepTiming(median_ms=median, q1_ms=median * 0.98, q3_ms=median * 1.03, min_ms=median * 0.95, max_ms=median * 1.1)


def make_dynamic(*, speedup_status=VerdictStatus.PASS, speedup=1.8, backend="cuda", sync_location="train.py:10", **extra):
    """A plausible CUDA harness result of a user entry: FP32, FP16 + GradScaler and BF16, with verdicts.
    `workload=Workload(source="preset", ...)` makes it a calibration run of the reference."""
    fp32 = ModeResult(
        mode="fp32", dtype="float32", step_time=timing(20.0), tokens_per_second=51200.0,
        peak_memory_bytes=4 * 2**30, memory_method="torch.cuda.max_memory_allocated",
        eval_loss=1.2345, accuracy=0.81, user_syncs_per_step=2.0, library_syncs_per_step=0.0,
        sync_sites=(SyncSite(sync_location, "item", 6),), train_loss_first=3.2, train_loss_last=1.3,
    )
    fp16 = ModeResult(
        mode="fp16", dtype="float16", grad_scaler=True, step_time=timing(20.0 / speedup),
        tokens_per_second=51200.0 * speedup, peak_memory_bytes=2 * 2**30, eval_loss=1.2401, accuracy=0.805,
        user_syncs_per_step=2.0, train_loss_first=3.2, train_loss_last=1.31, mfu=None,
    )
    bf16 = ModeResult(mode="bf16", dtype="bfloat16", error="bf16 unsupported on this device")
    verdicts = (
        Verdict("speedup", "fp16", "AMP speedup over FP32 (fp16)", ">=", 1.5, "x", speedup, speedup_status,
                f"{speedup:.2f}x vs 1.5x"),
        Verdict("memory_reduction", "fp16", "Peak-memory reduction vs FP32 (fp16)", ">=", 0.4, "fraction", 0.5,
                VerdictStatus.PASS, "50.0% >= 40%"),
        Verdict("accuracy_degradation", "bf16", "Accuracy degradation vs FP32 (bf16)", "<=", 0.01, "fraction", None,
                VerdictStatus.NOT_EVALUATED, "accuracy not measured: bf16 failed: bf16 unsupported on this device"),
    )
    base = dict(
        workload=Workload(source="entry", name="train:verify_entry", parameters=12_000_000, tokens_per_step=8192,
                          description="6-layer decoder LM"),
        device=DeviceFacts(backend=backend, name="NVIDIA H100 80GB HBM3", driver="550.54", total_memory_bytes=80 * 2**30,
                           torch_version="2.13.0", cuda_version="12.4", compute_capability="9.0", nvml="available"),
        method=Method(timer="cuda-events", warmup_steps=5, steps=20, repeats=5, sync_steps=3, eval_batches=8, seed=0),
        modes=(fp32, fp16, bf16),
        verdicts=verdicts,
        overhead_bound=False,
        overhead_note="device busy 96% of the FP32 step",
        chart_note="chart not written in tests",
    )
    base.update(extra)
    return DynamicResult(**base)


@pytest.fixture
def finding():
    return make_finding
