"""NVML is optional evidence: no driver or no pynvml must read as a reason, never a traceback."""

from __future__ import annotations

import sys
import time
import types

import pytest
import torch

from verifier.dynamic import nvml as nvml_module
from verifier.dynamic.nvml import Nvml, UtilizationSampler, describe_device


class FakeNvmlError(Exception):
    pass


class FakeLibraryNotFound(FakeNvmlError):
    pass


def fake_pynvml(power_supported: bool = True) -> types.ModuleType:
    module = types.ModuleType("pynvml")
    module.NVMLError = FakeNvmlError
    module.NVMLError_LibraryNotFound = FakeLibraryNotFound
    module.NVML_CLOCK_SM, module.NVML_CLOCK_MEM = 1, 2
    module.nvmlInit = lambda: None
    module.nvmlShutdown = lambda: None
    module.nvmlSystemGetDriverVersion = lambda: b"550.54.15"
    module.nvmlDeviceGetName = lambda handle: "NVIDIA H100 80GB HBM3"
    module.nvmlDeviceGetUtilizationRates = lambda handle: types.SimpleNamespace(gpu=90, memory=40)
    module.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(total=80 * 2**30, used=10 * 2**30)
    module.nvmlDeviceGetClockInfo = lambda handle, clock: {1: 1980, 2: 2619}[clock]
    module.nvmlDeviceGetMaxClockInfo = lambda handle, clock: {1: 1980, 2: 2619}[clock]

    def power(handle):
        if not power_supported:
            raise FakeNvmlError("Not Supported")
        return 350_000

    module.nvmlDeviceGetPowerUsage = power
    return module


def test_missing_driver_is_a_reason(monkeypatch):
    module = fake_pynvml()

    def no_library():
        raise FakeLibraryNotFound("NVML Shared Library Not Found")

    module.nvmlInit = no_library
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert Nvml.open() == (None, "no NVIDIA driver (NVML library not found)")


def test_missing_pynvml_is_a_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    session, status = Nvml.open()
    assert session is None
    assert status == "pynvml is not installed (pip install nvidia-ml-py)"


def test_this_machines_nvml_status_never_raises():
    session, status = Nvml.open()
    assert (session is None) == (status != "available")
    if session is not None:
        session.close()


def test_samples_read_every_counter_and_tolerate_unsupported_ones(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(power_supported=False))
    session, status = Nvml.open()
    assert status == "available"
    sample = session.sample(handle=object())
    assert (sample.gpu_util_percent, sample.memory_util_percent, sample.sm_clock_mhz) == (90.0, 40.0, 1980)
    assert sample.memory_used_bytes == 10 * 2**30
    assert sample.power_watts is None
    assert session.driver_version() == "550.54.15"


def test_background_sampler_summarises_what_it_saw(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    session, _ = Nvml.open()
    with UtilizationSampler(session, handle=object(), interval_s=0.01) as sampler:
        time.sleep(0.05)
    summary = sampler.summary()
    assert summary.samples >= 2
    assert summary.gpu_util_percent_mean == 90.0
    assert summary.power_watts_max == 350.0
    assert summary.memory_used_bytes_max == 10 * 2**30


def test_sampler_without_nvml_has_no_summary():
    with UtilizationSampler(None, None) as sampler:
        pass
    assert sampler.summary() is None


def test_cpu_device_facts_carry_the_nvml_reason():
    facts = describe_device(torch.device("cpu"), None, "no NVIDIA driver (NVML library not found)")
    assert facts.backend == "cpu"
    assert facts.nvml == "no NVIDIA driver (NVML library not found)"
    assert facts.driver is None and facts.clocks is None
    assert facts.torch_version == torch.__version__
    assert facts.name


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_device_facts_from_nvml():
    session, status = nvml_module.Nvml.open()
    facts = describe_device(torch.device("cuda"), session, status)
    assert facts.backend == "cuda"
    assert facts.total_memory_bytes and facts.total_memory_bytes > 0
    assert facts.compute_capability
