"""The chart (matplotlib): bars for measured figures only, intervals, ratio labels, target lines."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from verifier.dynamic.chart import build_figure, write_chart  # noqa: E402
from verifier.dynamic.results import (  # noqa: E402
    DeviceFacts,
    DynamicResult,
    MemorySplit,
    Method,
    ModeResult,
    Workload,
)
from verifier.dynamic.timing import summarize  # noqa: E402

MIB = 2**20


def split(activations_mib: int, estimated: bool = False) -> MemorySplit:
    return MemorySplit((600 + activations_mib) * MIB, 200 * MIB, 200 * MIB, 200 * MIB, activations_mib * MIB, estimated, "test")


def result(*modes: ModeResult) -> DynamicResult:
    return DynamicResult(
        workload=Workload("entry", "train:entry"),
        device=DeviceFacts("cuda", "Test Device"),
        method=Method("cuda-events", 5, 10, 5, 2, 4, 0),
        modes=modes,
    )


def bars(axes) -> list[tuple[float, float, float]]:
    return [(round(p.get_x() + p.get_width() / 2, 3), round(p.get_y(), 3), round(p.get_height(), 3)) for p in axes.patches]


def texts(axes) -> list[str]:
    return [t.get_text() for t in axes.texts]


def test_step_time_bars_intervals_ratio_labels_and_target_line():
    fp32 = ModeResult("fp32", "float32", step_time=summarize([30.0, 30.0, 30.0, 30.0, 30.0]), memory_split=split(1000))
    bf16 = ModeResult("bf16", "bfloat16", step_time=summarize([10.0, 10.0, 10.0, 10.0, 10.0]), memory_split=split(500))
    time_axes, memory_axes = build_figure(result(fp32, bf16)).axes
    assert bars(time_axes) == [(0.0, 0.0, 30.0), (1.0, 0.0, 10.0)]
    assert texts(time_axes) == ["3.00x vs FP32"]
    assert [line.get_ydata()[0] for line in time_axes.lines if line.get_linestyle() == "--"] == [20.0]
    assert time_axes.get_legend().get_texts()[0].get_text() == "target: FP32 / 1.5x = 20.00 ms"
    # Memory: four stacked parts per mode, and the target for the activations AMP can change.
    assert bars(memory_axes) == [
        (0.0, 0.0, 200.0), (0.0, 200.0, 200.0), (0.0, 400.0, 200.0), (0.0, 600.0, 1000.0),
        (1.0, 0.0, 200.0), (1.0, 200.0, 200.0), (1.0, 400.0, 200.0), (1.0, 600.0, 500.0),
    ]
    assert [line.get_ydata()[0] for line in memory_axes.lines] == [1200.0]  # 600 + 1000 x (1 - 40 %)
    assert memory_axes.get_title() == "Peak memory, MiB"


def test_unmeasured_figures_draw_no_bar_and_estimates_say_so():
    fp32 = ModeResult("fp32", "float32", step_time=summarize([20.0, 21.0]), memory_split=split(100, estimated=True))
    failed = ModeResult("bf16", "bfloat16", error="CUDA out of memory during warm-up: boom")
    time_axes, memory_axes = build_figure(result(fp32, failed)).axes
    assert [x for x, _, _ in bars(time_axes)] == [0.0]
    assert texts(time_axes) == ["not measured"]
    assert texts(memory_axes) == ["not measured"]
    assert memory_axes.get_title() == "Peak memory, MiB (estimate, FakeTensorMode)"


def test_the_png_is_written_and_the_same_figures_give_the_same_bytes(tmp_path):
    fp32 = ModeResult("fp32", "float32", step_time=summarize([20.0, 21.0, 22.0]))
    first = write_chart(result(fp32), str(tmp_path / "a.png"))
    second = write_chart(result(fp32), str(tmp_path / "b.png"))
    assert first.chart_path == str(tmp_path / "a.png") and first.chart_note == ""
    data = (tmp_path / "a.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data == (tmp_path / "b.png").read_bytes()
    assert second.chart_path is not None


def test_unwritable_location_is_a_note(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    written = write_chart(result(ModeResult("bf16", "bfloat16")), str(blocker / "chart.png"))
    assert written.chart_path is None
    assert written.chart_note.startswith("chart not written: ")


def test_a_file_verify_perf_did_not_write_is_never_replaced(tmp_path):
    mine = tmp_path / "train.png"
    mine.write_bytes(b"my own diagram")
    written = write_chart(result(ModeResult("fp32", "float32", step_time=summarize([20.0, 21.0]))), str(mine))
    assert written.chart_path is None
    assert written.chart_note == (
        f"chart not written: refusing to replace {mine}: verify-perf did not write it "
        "(pass --force to replace it, or choose another file)"
    )
    assert mine.read_bytes() == b"my own diagram"
    timed = result(ModeResult("fp32", "float32", step_time=summarize([20.0, 21.0])))
    again = write_chart(timed, str(tmp_path / "new.png"))
    assert write_chart(timed, str(tmp_path / "new.png")).chart_note == again.chart_note == ""
    forced = write_chart(timed, str(mine), force=True)
    assert forced.chart_path == str(mine) and mine.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_panel_no_mode_has_a_figure_for_is_left_out(tmp_path):
    # On CPU without a memory estimate: step times only, so only the step-time panel.
    fp32 = ModeResult("fp32", "float32", step_time=summarize([20.0, 21.0]), memory_split_note="not estimated: cut")
    bf16 = ModeResult("bf16", "bfloat16", step_time=summarize([30.0, 31.0]))
    (only,) = build_figure(result(fp32, bf16)).axes
    assert only.get_title() == "Step time, ms (median, 95% interval)"
    # Memory but no step time (every mode failed while timing): only the memory panel.
    failed = ModeResult("fp32", "float32", memory_split=split(100, estimated=True), error="boom")
    (only,) = build_figure(result(failed)).axes
    assert only.get_title() == "Peak memory, MiB (estimate, FakeTensorMode)"


def test_nothing_to_draw_writes_no_chart_and_says_why(tmp_path):
    failed = ModeResult("fp32", "float32", error="setup raised ValueError: no data")
    written = write_chart(result(failed), str(tmp_path / "none.png"))
    assert (written.chart_path, written.chart_note) == (None, "chart not written: no figure to draw")
    assert not (tmp_path / "none.png").exists()
