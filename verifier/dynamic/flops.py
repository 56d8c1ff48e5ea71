"""Model FLOP utilisation: achieved training FLOP/s over the device's peak dense throughput.

Peaks are NVIDIA's published dense (no sparsity) FP16/BF16 tensor-core figures for boards
whose NVML names identify them unambiguously; any other device gets no MFU and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

_PEAK_16BIT_TFLOPS: tuple[tuple[tuple[str, ...], float, str], ...] = (
    (("B200",), 2250.0, "B200"),
    (("H200",), 989.0, "H200"),
    (("H100", "HBM3"), 989.0, "H100 SXM"),
    (("H100", "NVL"), 835.0, "H100 NVL"),
    (("H100", "PCIE"), 756.0, "H100 PCIe"),
    (("A100",), 312.0, "A100"),
    (("L40S",), 362.0, "L40S"),
)
"""(name fragments that must all appear, dense FP16/BF16 TFLOP/s, board) in match order."""


@dataclass(frozen=True)
class Utilisation:
    achieved_tflops: float | None
    mfu: float | None
    note: str


def peak_16bit_tflops(device_name: str) -> tuple[float, str] | None:
    upper = device_name.upper()
    for fragments, tflops, board in _PEAK_16BIT_TFLOPS:
        if all(fragment in upper for fragment in fragments):
            return tflops, board
    return None


def model_flop_utilisation(
    flops_per_step: float | None,
    median_step_ms: float | None,
    mode: str,
    backend: str,
    device_name: str,
) -> Utilisation:
    if flops_per_step is None:
        return Utilisation(None, None, "FLOPs per step unknown for this workload")
    if not median_step_ms:
        return Utilisation(None, None, "step time not measured")
    achieved = flops_per_step / (median_step_ms / 1000.0) / 1e12
    if backend != "cuda":
        return Utilisation(achieved, None, "no MFU on CPU: no peak throughput figure for CPUs")
    if mode == "fp32":
        return Utilisation(achieved, None, "MFU is reported for the 16-bit tensor-core modes only")
    peak = peak_16bit_tflops(device_name)
    if peak is None:
        return Utilisation(achieved, None, f"no published peak 16-bit throughput known for {device_name!r}")
    tflops, board = peak
    return Utilisation(achieved, achieved / tflops, f"against {tflops:g} TFLOP/s dense FP16/BF16 peak ({board})")
