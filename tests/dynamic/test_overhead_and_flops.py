"""Overhead-bound classification and model FLOP utilisation arithmetic."""

from __future__ import annotations

import pytest
import torch

from verifier.dynamic.flops import model_flop_utilisation, peak_16bit_tflops
from verifier.dynamic.overhead import busy_from_times, probe_device_busy


def test_busy_fraction_classifies_the_workload():
    assert busy_from_times(20.0, 100.0).busy_fraction == 0.2
    assert busy_from_times(20.0, 100.0).overhead_bound is True
    assert busy_from_times(95.0, 100.0).overhead_bound is False
    assert busy_from_times(120.0, 100.0).busy_fraction == 1.0  # overlapping streams are capped
    assert busy_from_times(0.0, 100.0).overhead_bound is None


def test_probe_refuses_cpu():
    with pytest.raises(ValueError):
        probe_device_busy(lambda: None, torch.device("cpu"))


def test_peak_table_matches_unambiguous_board_names():
    assert peak_16bit_tflops("NVIDIA H100 80GB HBM3") == (989.0, "H100 SXM")
    assert peak_16bit_tflops("NVIDIA H100 PCIe") == (756.0, "H100 PCIe")
    assert peak_16bit_tflops("NVIDIA A100-SXM4-80GB") == (312.0, "A100")
    assert peak_16bit_tflops("NVIDIA GeForce RTX 4090") is None


def test_mfu_for_bf16_on_a_known_gpu():
    utilisation = model_flop_utilisation(989e12 * 0.05, 100.0, "bf16", "cuda", "NVIDIA H200")
    assert utilisation.achieved_tflops == pytest.approx(494.5)
    assert utilisation.mfu == pytest.approx(0.5)
    assert utilisation.note == "against 989 TFLOP/s dense FP16/BF16 peak (H200)"


@pytest.mark.parametrize(
    ("flops", "mode", "backend", "name", "note"),
    [
        (None, "bf16", "cuda", "NVIDIA H200", "FLOPs per step unknown for this workload"),
        (1e12, "bf16", "cpu", "AMD EPYC", "no MFU on CPU: no peak throughput figure for CPUs"),
        (1e12, "fp32", "cuda", "NVIDIA H200", "MFU is reported for the 16-bit tensor-core modes only"),
        (1e12, "bf16", "cuda", "Mystery GPU", "no published peak 16-bit throughput known for 'Mystery GPU'"),
    ],
)
def test_mfu_is_none_with_a_reason(flops, mode, backend, name, note):
    utilisation = model_flop_utilisation(flops, 10.0, mode, backend, name)
    assert utilisation.mfu is None
    assert utilisation.note == note
