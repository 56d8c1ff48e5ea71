"""Overhead-bound classification and model FLOP utilisation arithmetic."""

from __future__ import annotations

import pytest
import torch

from verifier.dynamic.flops import model_flop_utilisation, peak_tflops
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


def test_peak_table_matches_unambiguous_board_names_per_mode():
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == (989.0, "989 TFLOP/s dense BF16 peak (H100 SXM)")
    assert peak_tflops("NVIDIA H100 80GB HBM3", "tf32") == (494.0, "494 TFLOP/s dense TF32 peak (H100 SXM)")
    assert peak_tflops("NVIDIA H100 80GB HBM3", "fp32") == (67.0, "67 TFLOP/s dense FP32 peak (H100 SXM)")
    assert peak_tflops("NVIDIA H100 PCIe", "fp16") == (756.0, "756 TFLOP/s dense FP16 peak (H100 PCIe)")
    assert peak_tflops("NVIDIA A100-SXM4-80GB", "tf32") == (156.0, "156 TFLOP/s dense TF32 peak (A100)")
    assert peak_tflops("NVIDIA GeForce RTX 4090", "bf16") is None
    assert peak_tflops("NVIDIA B200", "fp32") is None  # no figure we can cite: no MFU rather than a guess


def test_a_mig_slice_scales_the_peak_by_its_share_of_the_multiprocessors():
    peak, what = peak_tflops("NVIDIA H100 80GB HBM3 MIG 3g.40gb", "bf16", multiprocessors=66)
    assert peak == 494.5
    assert what == (
        "989 TFLOP/s dense BF16 peak (H100 SXM) scaled to the 66 of 132 SMs visible (MIG or partitioned device): 494.5 TFLOP/s"
    )
    assert peak_tflops("NVIDIA H100 80GB HBM3", "bf16", multiprocessors=132)[0] == 989.0


def test_mfu_for_bf16_on_a_known_gpu():
    utilisation = model_flop_utilisation(989e12 * 0.05, 100.0, "bf16", "cuda", "NVIDIA H200")
    assert utilisation.achieved_tflops == pytest.approx(494.5)
    assert utilisation.mfu == pytest.approx(0.5)
    assert utilisation.note == "against 989 TFLOP/s dense BF16 peak (H200)"


def test_fp32_is_judged_against_the_fp32_peak_not_the_tensor_core_one():
    utilisation = model_flop_utilisation(67e12 * 0.01, 20.0, "fp32", "cuda", "NVIDIA H200")
    assert utilisation.mfu == pytest.approx(0.5)
    assert utilisation.note == "against 67 TFLOP/s dense FP32 peak (H200)"


@pytest.mark.parametrize(
    ("flops", "mode", "backend", "name", "note"),
    [
        (None, "bf16", "cuda", "NVIDIA H200", "FLOPs per step unknown for this workload"),
        (1e12, "bf16", "cpu", "AMD EPYC", "no MFU on CPU: no peak throughput figure for CPUs"),
        (1e12, "bf16", "cuda", "Mystery GPU", "no published dense BF16 peak known for 'Mystery GPU'"),
    ],
)
def test_mfu_is_none_with_a_reason(flops, mode, backend, name, note):
    utilisation = model_flop_utilisation(flops, 10.0, mode, backend, name)
    assert utilisation.mfu is None
    assert utilisation.note == note
