"""The dynamic results as rows and lines ready for the template, tolerant of every None.

A figure the harness did not measure reads "not measured"; a target is ✅ or ❌ only with a
measured value behind it, otherwise "not measured: <reason>".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from verifier.dynamic.results import MODES, DynamicResult, ModeResult, Verdict, VerdictStatus
from verifier.dynamic.summary import library_site_line
from verifier.report import figures
from verifier.report.markdown_text import code_span

MODE_TITLES = {"fp32": "FP32", "tf32": "FP32 + TF32", "fp16": "FP16", "bf16": "BF16"}


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def verdict_result(verdict: Verdict) -> str:
    if verdict.measured is not None and verdict.status is VerdictStatus.PASS:
        return "✅ PASS"
    if verdict.measured is not None and verdict.status is VerdictStatus.MISS:
        return "❌ MISS"
    if verdict.status is VerdictStatus.UNSTABLE or verdict.reason.startswith("not judged"):
        return verdict.reason
    reason = verdict.reason or "no reason given"
    # A ratio can be measured yet not judged (e.g. speed on CPU): say "not evaluated", not "passed".
    prefix = "not evaluated" if verdict.measured is not None else "not measured"
    return reason if reason.startswith(prefix) else f"{prefix}: {reason}"


def verdict_table(dynamic: DynamicResult) -> Table:
    rows = tuple(
        (
            v.label,
            figures.target_value(v.measured, v.unit)
            + (f" (95% interval {v.interval[0]:.2f}x–{v.interval[1]:.2f}x)" if v.interval else "")
            + (f" (per seed {figures.target_value(v.band[0], v.unit)} to {figures.target_value(v.band[1], v.unit)})" if v.band else ""),
            f"{v.comparison} {figures.target_value(v.target, v.unit)}",
            verdict_result(v),
            v.reason if v.status is not VerdictStatus.NOT_EVALUATED else "",
        )
        for v in dynamic.verdicts
    )
    return Table(("Target", "Measured", "Required", "Result", "Note"), rows)


def mode_title(mode: ModeResult) -> str:
    title = MODE_TITLES.get(mode.mode, mode.mode.upper())
    return f"{title} + GradScaler" if mode.grad_scaler else title


def modes_in_order(dynamic: DynamicResult) -> list[ModeResult]:
    rank = {name: i for i, name in enumerate(MODES)}
    return sorted(dynamic.modes, key=lambda m: (rank.get(m.mode, len(rank)), m.mode))


def mode_table(dynamic: DynamicResult) -> Table:
    modes = modes_in_order(dynamic)

    def row(label: str, cell, optional: bool = False) -> tuple[str, ...] | None:
        # A failed mode keeps the figures it measured before failing; the rest read "not measured".
        values = [cell(m) for m in modes]
        if optional and all(v == figures.NOT_MEASURED for v in values):
            return None
        return (label, *values)

    candidates = [
        ("Status", lambda m: "ok", False),
        ("Step time, median (IQR)", _step_time, False),
        ("Throughput", lambda m: figures.rate(m.tokens_per_second, "tokens/s"), False),
        ("Peak memory", lambda m: figures.mebibytes(m.peak_memory_bytes), False),
        ("Process RSS peak", lambda m: figures.mebibytes(m.process_rss_peak_bytes), True),
        ("Peak split: parameters / gradients / optimizer state / activations and other", _memory_split, True),
        ("Train loss, first → last", _train_loss, False),
        (_seeded("Eval loss", dynamic), lambda m: figures.decimal(m.eval_loss), False),
        (_seeded("Accuracy", dynamic) + (" (min–max)" if dynamic.method.accuracy_seeds else ""), _accuracy, False),
        ("Host syncs per step (user code)", lambda m: figures.decimal(m.user_syncs_per_step, 2), False),
        ("Host syncs per step (inside torch)", lambda m: figures.decimal(m.library_syncs_per_step, 2), True),
        ("Syncs flagged by CUDA sync debug mode per step",
         lambda m: figures.decimal(getattr(m, "device_flagged_syncs_per_step", None), 2), True),
        ("Device busy (kernel time / wall time)", lambda m: figures.percent(getattr(m, "device_busy_fraction", None)), True),
        ("GPU utilization, mean (NVML)", _mode_utilization, True),
        ("Achieved TFLOP/s", lambda m: figures.decimal(m.achieved_tflops, 2), True),
        ("MFU", lambda m: figures.percent(m.mfu), True),
    ]
    rows = [r for label, cell, optional in candidates if (r := row(label, cell, optional)) is not None]
    rows[0] = ("Status", *("ok" if m.ok else f"failed: {m.error}" for m in modes))
    return Table(("Metric", *(mode_title(m) for m in modes)), tuple(rows))


def _seeded(label: str, dynamic: DynamicResult) -> str:
    """"Accuracy, mean of 3 seeds × 60 steps": the figure's method in its label."""
    method = dynamic.method
    seeds = len(method.accuracy_seeds)
    if not seeds or method.accuracy_steps is None:
        return label
    return f"{label}, mean of {seeds} seed{'s' if seeds > 1 else ''} × {method.accuracy_steps} steps"


def _accuracy(mode: ModeResult) -> str:
    text = figures.decimal(mode.accuracy)
    if mode.accuracy is None:
        return text
    band = mode.accuracy_band
    if band is not None:
        return f"{text} ({band[0]:.4f}–{band[1]:.4f})"
    return f"{text} (one run, no band)"


def _memory_split(mode: ModeResult) -> str:
    split = mode.memory_split
    if split is None:
        return mode.memory_split_note or figures.NOT_MEASURED
    parts = (split.parameters_bytes, split.gradients_bytes, split.optimizer_state_bytes, split.activations_other_bytes)
    text = " / ".join(figures.mebibytes(part) for part in parts)
    return f"{text} (estimate, FakeTensorMode)" if split.estimated else text


def _mode_utilization(mode: ModeResult) -> str:
    summary = getattr(mode, "utilization", None)
    mean = summary.gpu_util_percent_mean if summary is not None else None
    return figures.percent(_fraction(mean))


def _step_time(mode: ModeResult) -> str:
    timing = mode.step_time
    if timing is None:
        return figures.NOT_MEASURED
    return f"{figures.milliseconds(timing.median_ms)} (IQR {figures.milliseconds(timing.iqr_ms)})"


def _train_loss(mode: ModeResult) -> str:
    if mode.train_loss_first is None and mode.train_loss_last is None:
        return figures.NOT_MEASURED
    return f"{figures.decimal(mode.train_loss_first)} → {figures.decimal(mode.train_loss_last)}"


def subject_line(dynamic: DynamicResult | None, note: str) -> str:
    """The report's first word on which code the measured figures are about."""
    if dynamic is None:
        why = note.removeprefix("not run: ") if note.startswith("not run: ") else note
        return f"none: the dynamic harness {'did not run' if note.startswith('not run: ') else 'failed'} ({why}); static analysis only"
    name = code_span(dynamic.workload.name)
    if dynamic.role == "calibration":
        return (
            f"none of the analysed code: the dynamic run measured the bundled reference implementation "
            f"({name} preset) as a calibration of this machine and toolchain; section 3 shows it, the score "
            "and decision do not count it (`--entry module:function` measures your own step)"
        )
    if dynamic.failure:
        return f"your entry point {name}, which failed: {dynamic.failure}"
    return f"your entry point {name}: measured, judged and scored"


def section_heading(dynamic: DynamicResult) -> tuple[str, str]:
    """(subsection title, one sentence on what the figures below are about)."""
    if dynamic.role == "calibration":
        return (
            "Calibration: the reference implementation on this machine",
            "These figures measure the bundled reference AMP training implementation, not the analysed code: "
            "they calibrate the machine and toolchain and are never part of the score or the decision.",
        )
    return (
        f"Measured: your entry point {code_span(dynamic.workload.name)}",
        "These figures measure your own training step; its targets are judged and scored.",
    )


def device_lines(dynamic: DynamicResult) -> list[str]:
    device = dynamic.device
    lines = [f"Device: {device.name} ({device.backend})"]
    if device.driver:
        lines.append(f"Driver: {device.driver}")
    if device.total_memory_bytes is not None:
        lines.append(f"Memory: {figures.gibibytes(device.total_memory_bytes)}")
    runtime = f"torch {device.torch_version or 'unknown'}"
    if device.cuda_version:
        runtime += f", CUDA {device.cuda_version}"
    if device.compute_capability:
        runtime += f", compute capability {device.compute_capability}"
    if device.cpu_threads is not None:
        runtime += f", {device.cpu_threads} CPU threads"
    lines.append(f"Runtime: {runtime}")
    lines.append(f"NVML: {device.nvml}")
    if device.clocks is not None:
        clocks = device.clocks
        lines.append(
            f"Clocks: SM {_mhz(clocks.sm_mhz)} of {_mhz(clocks.sm_max_mhz)}, "
            f"memory {_mhz(clocks.memory_mhz)} of {_mhz(clocks.memory_max_mhz)}"
        )
    if device.utilization is not None:
        u = device.utilization
        lines.append(
            f"Utilization over {u.samples} samples every {u.interval_s:g} s: "
            f"GPU mean {figures.percent(_fraction(u.gpu_util_percent_mean))} "
            f"(max {figures.percent(_fraction(u.gpu_util_percent_max))}), "
            f"memory-controller mean {figures.percent(_fraction(u.memory_util_percent_mean))}, "
            f"memory used max {figures.mebibytes(u.memory_used_bytes_max)}, "
            f"power mean {_watts(u.power_watts_mean)} (max {_watts(u.power_watts_max)}), "
            f"SM clock mean {_mhz(u.sm_clock_mhz_mean)}"
        )
    return lines


def workload_lines(dynamic: DynamicResult) -> list[str]:
    workload, method = dynamic.workload, dynamic.method
    lines = [f"Workload: {workload.name} ({workload.source})" + (f": {workload.description}" if workload.description else "")]
    sizes = []
    if workload.parameters is not None:
        sizes.append(f"{workload.parameters:,} trainable parameters")
    if workload.tokens_per_step is not None:
        sizes.append(f"{workload.tokens_per_step:,} tokens per step")
    if workload.compiled:
        sizes.append("torch.compile on")
    if workload.ddp_world_size > 1:
        sizes.append(f"DDP over {workload.ddp_world_size} processes")
    if sizes:
        lines.append("Size: " + ", ".join(sizes))
    lines.append(
        f"Method: {method.timer} timer; per mode {method.warmup_steps} untimed warm-up, "
        f"{method.repeats} × {method.steps} timed steps, a separate untimed sync-counting pass of "
        f"{method.sync_steps}; evaluation on {_held_out(method.eval_batches)}; seed {method.seed}"
    )
    if method.overhead_probe:
        lines.append(f"Overhead probe: {method.overhead_probe}")
    lines.extend(f"Note: {note}" for note in method.notes)
    return lines


def method_notes(dynamic: DynamicResult) -> list[str]:
    """Per-mode footnotes on how memory, syncs and MFU were measured, without repeats."""
    notes: list[str] = []
    for mode in modes_in_order(dynamic):
        split = mode.memory_split.method if mode.memory_split is not None else ""
        for label, text in (("peak memory", mode.memory_method), ("peak split", split), ("syncs", mode.sync_method), ("MFU", mode.mfu_note)):
            line = f"{label}: {text}"
            if text and line not in notes:
                notes.append(line)
    return notes


def sync_site_lines(dynamic: DynamicResult) -> list[str]:
    steps = dynamic.method.sync_steps or None
    lines = []
    for mode in modes_in_order(dynamic):
        for site in mode.sync_sites:
            per_step = f", {site.count / steps:.2f} per step" if steps else ""
            lines.append(
                f"{mode_title(mode)}: {code_span(site.location)} {site.kind}: "
                f"{site.count} syncs over {dynamic.method.sync_steps} steps{per_step}"
            )
    return lines


def library_sync_lines(dynamic: DynamicResult) -> list[str]:
    """The syncs libraries made themselves, each named and said to happen on CUDA or not."""
    return [
        f"{mode_title(mode)}: {library_site_line(site, dynamic.method.sync_steps, code_span)}"
        for mode in modes_in_order(dynamic)
        for site in mode.library_sync_sites
    ]


def chart_link(dynamic: DynamicResult, report_path: str | None) -> str | None:
    """The chart's path relative to the report, in posix form; None when there is no chart."""
    if not dynamic.chart_path:
        return None
    base = os.path.dirname(os.path.abspath(report_path)) if report_path else os.getcwd()
    return os.path.relpath(os.path.abspath(dynamic.chart_path), base).replace(os.sep, "/")


def _held_out(batches: int | None) -> str:
    return "the entry point's own held-out data" if batches is None else f"{batches} held-out batches"


def _fraction(percent_value: float | None) -> float | None:
    return None if percent_value is None else percent_value / 100


def _mhz(value: float | None) -> str:
    return figures.NOT_MEASURED if value is None else f"{value:,.0f} MHz"


def _watts(value: float | None) -> str:
    return figures.NOT_MEASURED if value is None else f"{value:.0f} W"
