"""Model FLOP utilisation: achieved training FLOP/s over the device's peak dense throughput.

Peaks are NVIDIA's published dense (no sparsity) figures per precision for boards whose NVML
names identify them unambiguously, scaled down on a MIG slice; any other device or mode gets no
MFU and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

_PEAKS: tuple[tuple[tuple[str, ...], str, int, dict[str, float]], ...] = (
    (("H200",), "H200", 132, {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),
    (("H100", "HBM3"), "H100 SXM", 132, {"bf16": 989.0, "fp16": 989.0, "tf32": 494.0, "fp32": 67.0}),
    (("H100", "NVL"), "H100 NVL", 132, {"bf16": 835.0, "fp16": 835.0, "tf32": 417.0, "fp32": 60.0}),
    (("H100", "PCIE"), "H100 PCIe", 114, {"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    (("A100",), "A100", 108, {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    (("L40S",), "L40S", 142, {"bf16": 362.0, "fp16": 362.0, "tf32": 183.0, "fp32": 91.6}),
    (("B200",), "B200", 148, {"bf16": 2250.0, "fp16": 2250.0}),
)
"""(name fragments that must all appear, board, its streaming multiprocessors, dense TFLOP/s per
mode) in match order: NVIDIA's published dense (no sparsity) figures; fp32 is the CUDA-core peak,
tf32 the tensor-core one. A mode without a published figure gets no MFU."""


@dataclass(frozen=True)
class Utilisation:
    achieved_tflops: float | None
    mfu: float | None
    note: str


def peak_tflops(device_name: str, mode: str, multiprocessors: int | None = None) -> tuple[float, str] | None:
    """(dense peak TFLOP/s for `mode`, what it is), scaled by the share of the board's SMs that
    are visible (a MIG slice or another partition); None when no figure is published."""
    upper = device_name.upper()
    for fragments, board, board_sms, peaks in _PEAKS:
        if all(fragment in upper for fragment in fragments):
            if mode not in peaks:
                return None
            peak, what = peaks[mode], f"{peaks[mode]:g} TFLOP/s dense {mode.upper()} peak ({board})"
            if multiprocessors is not None and 0 < multiprocessors < board_sms:
                peak = peak * multiprocessors / board_sms
                what += f" scaled to the {multiprocessors} of {board_sms} SMs visible (MIG or partitioned device): {peak:.1f} TFLOP/s"
            return peak, what
    return None


def model_flop_utilisation(
    flops_per_step: float | None,
    median_step_ms: float | None,
    mode: str,
    backend: str,
    device_name: str,
    multiprocessors: int | None = None,
) -> Utilisation:
    if flops_per_step is None:
        return Utilisation(None, None, "FLOPs per step unknown for this workload")
    if not median_step_ms:
        return Utilisation(None, None, "step time not measured")
    achieved = flops_per_step / (median_step_ms / 1000.0) / 1e12
    if backend != "cuda":
        return Utilisation(achieved, None, "no MFU on CPU: no peak throughput figure for CPUs")
    peak = peak_tflops(device_name, mode, multiprocessors)
    if peak is None:
        return Utilisation(achieved, None, f"no published dense {mode.upper()} peak known for {device_name!r}")
    tflops, what = peak
    return Utilisation(achieved, achieved / tflops, f"against {what}")
