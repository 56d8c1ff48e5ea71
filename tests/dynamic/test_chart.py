"""The PNG chart is a valid image that shows bars for measured figures and nothing for others."""

from __future__ import annotations

import struct
import zlib

from verifier.dynamic.chart import HEIGHT, MODE_COLORS, WIDTH, render_chart, write_chart
from verifier.dynamic.results import DeviceFacts, DynamicResult, Method, ModeResult, StepTiming, Workload


def decode(png: bytes) -> tuple[int, int, list[bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, size = 8, b"", (0, 0)
    while position < len(png):
        (length,) = struct.unpack(">I", png[position : position + 4])
        kind, data = png[position + 4 : position + 8], png[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", png[position + 8 + length : position + 12 + length])
        assert crc == zlib.crc32(kind + data)
        if kind == b"IHDR":
            size = struct.unpack(">II", data[:8])
        elif kind == b"IDAT":
            idat += data
        position += 12 + length
    width, height = size
    raw = zlib.decompress(idat)
    stride = 1 + 3 * width
    rows = [raw[i * stride + 1 : (i + 1) * stride] for i in range(height)]
    return width, height, rows


def count_color(rows: list[bytes], color: tuple[int, int, int]) -> int:
    pixel = bytes(color)
    return sum(row[i : i + 3] == pixel for row in rows for i in range(0, len(row), 3))


def result(backend: str, fp32_peak: int | None, bf16: ModeResult) -> DynamicResult:
    fp32 = ModeResult("fp32", "float32", step_time=StepTiming(20.0, 19.0, 21.0, 18.0, 22.0), peak_memory_bytes=fp32_peak)
    return DynamicResult(
        workload=Workload("preset", "gpu"),
        device=DeviceFacts(backend, "Test Device"),
        method=Method("cuda-events", 5, 10, 3, 2, 4, 0),
        modes=(fp32, bf16),
    )


def test_bars_for_measured_modes():
    bf16 = ModeResult("bf16", "bfloat16", step_time=StepTiming(8.0, 7.5, 8.5, 7.0, 9.0), peak_memory_bytes=600 * 2**20)
    width, height, rows = decode(render_chart(result("cuda", 1000 * 2**20, bf16)))
    assert (width, height) == (WIDTH, HEIGHT)
    assert count_color(rows, MODE_COLORS["fp32"]) > count_color(rows, MODE_COLORS["bf16"]) > 0


def test_unmeasured_figures_draw_no_bar():
    failed = ModeResult("bf16", "bfloat16", error="CUDA out of memory during warm-up: boom")
    _, _, rows = decode(render_chart(result("cpu", None, failed)))
    assert count_color(rows, MODE_COLORS["bf16"]) == 0


def test_unwritable_location_is_a_note(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    written = write_chart(result("cpu", None, ModeResult("bf16", "bfloat16")), str(blocker / "chart.png"))
    assert written.chart_path is None
    assert written.chart_note.startswith("chart not written: ")
