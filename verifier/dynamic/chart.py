"""The PNG chart next to the report: step time (median with IQR whisker) and peak memory
per mode, side by side. A mode without a figure shows "N/A", never an empty bar."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from verifier.dynamic.canvas import Canvas, Color, text_width
from verifier.dynamic.results import DynamicResult, ModeResult

WIDTH, HEIGHT = 820, 420
PANEL_TOP, PANEL_BOTTOM = 90, 340
MODE_COLORS: dict[str, Color] = {"fp32": (120, 120, 120), "fp16": (230, 140, 30), "bf16": (40, 110, 200)}
INK: Color = (20, 20, 20)
FAINT: Color = (150, 150, 150)


@dataclass(frozen=True)
class Panel:
    heading: str
    value: Callable[[ModeResult], float | None]
    label: Callable[[float], str]
    empty_reason: str
    spread: Callable[[ModeResult], tuple[float, float] | None] = lambda mode: None


STEP_TIME = Panel(
    heading="STEP TIME, MS (MEDIAN, IQR)",
    value=lambda m: m.step_time.median_ms if m.step_time else None,
    label=lambda v: f"{v:.1f}",
    empty_reason="NOT MEASURED",
    spread=lambda m: (m.step_time.q1_ms, m.step_time.q3_ms) if m.step_time else None,
)


def memory_panel(backend: str) -> Panel:
    return Panel(
        heading="PEAK MEMORY, MIB",
        value=lambda m: m.peak_memory_bytes / 2**20 if m.peak_memory_bytes is not None else None,
        label=lambda v: f"{v:,.0f}",
        empty_reason="NOT MEASURED ON CPU" if backend == "cpu" else "NOT MEASURED",
    )


def render_chart(result: DynamicResult) -> bytes:
    canvas = Canvas(WIDTH, HEIGHT)
    title = f"{result.workload.name} on {result.device.name}"
    canvas.text(20, 16, _fit(title, 2, WIDTH - 40), INK, scale=2)
    _draw_panel(canvas, 20, 400, STEP_TIME, result.modes)
    _draw_panel(canvas, 420, 800, memory_panel(result.device.backend), result.modes)
    footer = f"{result.method.timer}, {result.method.repeats} x {result.method.steps} steps after {result.method.warmup_steps} warm-up"
    canvas.text(20, HEIGHT - 30, _fit(footer, 2, WIDTH - 40), FAINT, scale=2)
    return canvas.png_bytes()


def _draw_panel(canvas: Canvas, left: int, right: int, panel: Panel, modes: tuple[ModeResult, ...]) -> None:
    canvas.text(left, PANEL_TOP - 36, panel.heading, INK, scale=2)
    canvas.fill_rect(left, PANEL_BOTTOM, right, PANEL_BOTTOM + 2, INK)
    values = [panel.value(m) for m in modes]
    measured = [v for v in values if v is not None]
    if not measured:
        middle = (PANEL_TOP + PANEL_BOTTOM) // 2
        canvas.text(left + (right - left - text_width(panel.empty_reason)) // 2, middle, panel.empty_reason, FAINT)
    whisker_tops = [spread[1] for m in modes if (spread := panel.spread(m)) is not None]
    top = max(measured + whisker_tops, default=1.0) or 1.0
    slot = (right - left) // max(1, len(modes))
    usable = PANEL_BOTTOM - PANEL_TOP - 24

    def y_of(figure: float) -> int:
        return PANEL_BOTTOM - max(1, round(usable * figure / top))

    for index, (mode, figure) in enumerate(zip(modes, values)):
        centre = left + slot * index + slot // 2
        canvas.text(centre - text_width(mode.mode) // 2, PANEL_BOTTOM + 10, mode.mode.upper(), INK)
        if figure is None:
            if measured:
                canvas.text(centre - text_width("N/A") // 2, PANEL_BOTTOM - 24, "N/A", FAINT)
            continue
        half_bar = min(70, slot - 30) // 2
        color = MODE_COLORS.get(mode.mode, FAINT)
        canvas.fill_rect(centre - half_bar, y_of(figure), centre + half_bar, PANEL_BOTTOM, color)
        spread = panel.spread(mode)
        if spread is not None:
            low, high = y_of(spread[0]), y_of(spread[1])
            canvas.fill_rect(centre - 1, high, centre + 1, low + 1, INK)
            canvas.fill_rect(centre - 8, high, centre + 8, high + 2, INK)
            canvas.fill_rect(centre - 8, low - 1, centre + 8, low + 1, INK)
        text = panel.label(figure)
        top_of_label = min(y_of(figure), y_of(spread[1]) if spread else PANEL_BOTTOM) - 20
        canvas.text(centre - text_width(text) // 2, top_of_label, text, INK)


def _fit(text: str, scale: int, width: int) -> str:
    limit = width // text_width(" ", scale)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def write_chart(result: DynamicResult, path: str) -> DynamicResult:
    """Write the PNG atomically; returns the result with chart_path/chart_note filled in."""
    temporary = None
    try:
        data = render_chart(result)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".chart-", suffix=".png", dir=folder)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        # mkstemp creates the file private (0600); a chart is an ordinary readable file.
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as error:
        if temporary and os.path.exists(temporary):
            os.unlink(temporary)
        return dataclasses.replace(result, chart_path=None, chart_note=f"chart not written: {error}")
    return dataclasses.replace(result, chart_path=path, chart_note="")
