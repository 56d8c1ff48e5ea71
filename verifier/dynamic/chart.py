"""The PNG chart next to the report, drawn with matplotlib (the `dynamic` extra).

Left: step time per mode, the median with its 95 % bootstrap interval, each AMP bar labelled
with its speedup over FP32, and a target line at FP32 / min-speedup. Right: peak memory per
mode, split into parameters, gradients, optimizer state and activations/other where the
harness has the split (estimates say so), with the target line for the activations AMP can
change. A mode without a figure shows "not measured", never an empty bar; a panel no mode has a
figure for is left out, and with no figure at all no chart is written.
"""

from __future__ import annotations

import dataclasses
import io

from verifier.dynamic.intervals import median_interval
from verifier.dynamic.results import DynamicResult
from verifier.errors import UsageError
from verifier.writing import output_target

MODE_COLORS = {"fp32": "#787878", "fp16": "#e68c1e", "bf16": "#286ec8"}
SPLIT_PARTS = (
    ("parameters", "parameters_bytes", "#4c4c4c"),
    ("gradients", "gradients_bytes", "#8c8c8c"),
    ("optimizer state", "optimizer_state_bytes", "#b4b4b4"),
    ("activations and other", "activations_other_bytes", "#5aa05a"),
)
MIB = 2**20


def panels(result: DynamicResult) -> tuple[str, ...]:
    """The panels some mode has a figure for: "step time", "memory"."""
    shown = []
    if any(m.step_time is not None for m in result.modes):
        shown.append("step time")
    if any(m.memory_split is not None or m.peak_memory_bytes is not None for m in result.modes):
        shown.append("memory")
    return tuple(shown)


def build_figure(result: DynamicResult):  # noqa: ANN201 - matplotlib.figure.Figure, imported lazily
    from matplotlib.figure import Figure

    drawn = panels(result)
    if not drawn:
        raise ValueError("nothing to draw: no mode has a step time or a memory figure")
    figure = Figure(figsize=(5.2 * len(drawn), 4.4), dpi=100)
    axes = figure.subplots(1, len(drawn), squeeze=False)[0]
    for panel, panel_axes in zip(drawn, axes):
        (_step_time if panel == "step time" else _memory)(panel_axes, result)
    figure.suptitle(f"{result.workload.name} on {result.device.name} ({result.role})", fontsize=11)
    method = result.method
    figure.text(
        0.01, 0.01, f"{method.timer}; {method.repeats} x {method.steps} timed steps after {method.warmup_steps} warm-up",
        fontsize=8, color="#666666",
    )
    figure.tight_layout(rect=(0, 0.04, 1, 0.95))
    return figure


def _step_time(axes, result: DynamicResult) -> None:  # noqa: ANN001
    modes = list(result.modes)
    names = [m.mode.upper() for m in modes]
    axes.set_title("Step time, ms (median, 95% interval)", fontsize=10)
    baseline = result.mode("fp32")
    base = baseline.step_time.median_ms if baseline is not None and baseline.step_time else None
    for index, mode in enumerate(modes):
        if mode.step_time is None:
            axes.text(index, 0, "not measured", ha="center", va="bottom", fontsize=8, color="#666666")
            continue
        median = mode.step_time.median_ms
        low, high = median_interval(mode.step_time.samples_ms) or (mode.step_time.q1_ms, mode.step_time.q3_ms)
        axes.bar(index, median, color=MODE_COLORS.get(mode.mode, "#999999"), label=mode.mode,
                 yerr=[[median - low], [high - median]], capsize=6)
        if base is not None and mode.mode != "fp32":
            axes.annotate(f"{base / median:.2f}x vs FP32", (index, high), ha="center", va="bottom", fontsize=8,
                          xytext=(0, 3), textcoords="offset points")
    if base is not None:
        target = base / result.thresholds.min_speedup
        axes.axhline(target, color="#c83232", linestyle="--", linewidth=1,
                     label=f"target: FP32 / {result.thresholds.min_speedup:g}x = {target:.2f} ms")
        axes.legend(fontsize=7, loc="upper right")
    axes.set_xticks(range(len(modes)), names)
    axes.margins(y=0.35)  # headroom: the legend and the ratio labels never cover a bar


def _memory(axes, result: DynamicResult) -> None:  # noqa: ANN001
    modes = list(result.modes)
    estimated = any(m.memory_split is not None and m.memory_split.estimated for m in modes)
    axes.set_title("Peak memory, MiB" + (" (estimate, FakeTensorMode)" if estimated else ""), fontsize=10)
    labelled: set[str] = set()
    for index, mode in enumerate(modes):
        split = mode.memory_split
        if split is not None:
            bottom = 0.0
            for label, field, color in SPLIT_PARTS:
                height = getattr(split, field) / MIB
                axes.bar(index, height, bottom=bottom, color=color, label=None if label in labelled else label)
                labelled.add(label)
                bottom += height
        elif mode.peak_memory_bytes is not None:
            axes.bar(index, mode.peak_memory_bytes / MIB, color=MODE_COLORS.get(mode.mode, "#999999"))
        else:
            axes.text(index, 0, "not measured", ha="center", va="bottom", fontsize=8, color="#666666")
    baseline = result.mode("fp32")
    if baseline is not None and baseline.memory_split is not None:
        split = baseline.memory_split
        persistent = split.peak_bytes - split.activations_other_bytes
        allowed = split.activations_other_bytes * (1 - result.thresholds.min_memory_reduction)
        axes.axhline((persistent + allowed) / MIB, color="#c83232", linestyle="--", linewidth=1,
                     label=f"target: activations -{result.thresholds.min_memory_reduction:.0%} vs FP32")
    if labelled or baseline is not None and baseline.memory_split is not None:
        axes.legend(fontsize=7, loc="upper right")
    axes.set_xticks(range(len(modes)), [m.mode.upper() for m in modes])
    axes.margins(y=0.35)


def write_chart(result: DynamicResult, path: str, *, force: bool = False) -> DynamicResult:
    """Write the PNG atomically, never over a file verify-perf did not write (`verifier.writing`);
    returns the result with chart_path/chart_note filled in."""
    if not panels(result):
        return dataclasses.replace(result, chart_path=None, chart_note="chart not written: no figure to draw")
    try:
        figure = build_figure(result)
        image = io.BytesIO()
        # No software/version stamp: the same figures give the same bytes.
        figure.savefig(image, format="png", metadata={"Software": None})
        target = output_target(path, force=force)
        if target.kind != "file":
            raise UsageError(f"{path} is not a regular file")
        target.write_bytes(image.getvalue())
    except ImportError as error:
        return dataclasses.replace(result, chart_path=None, chart_note=f"chart not written: matplotlib is missing ({error})")
    except (OSError, UsageError) as error:
        return dataclasses.replace(result, chart_path=None, chart_note=f"chart not written: {error}")
    return dataclasses.replace(result, chart_path=path, chart_note="")
