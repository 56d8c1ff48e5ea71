"""Device facts and a background utilisation sampler through NVML (`pynvml`).

NVML is optional evidence: without an NVIDIA driver, or without `pynvml`, every function
here returns None or a reason string instead of raising, and the harness runs on.
"""

from __future__ import annotations

import os
import platform
import threading
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import torch

from verifier.dynamic.results import ClockFacts, DeviceFacts, UtilizationSummary


@dataclass(frozen=True)
class NvmlSample:
    gpu_util_percent: float | None
    memory_util_percent: float | None
    memory_used_bytes: int | None
    power_watts: float | None
    sm_clock_mhz: float | None


class Nvml:
    """An open NVML session. Build it with `Nvml.open()`, which never raises."""

    def __init__(self, module: Any) -> None:
        self._nvml = module

    @classmethod
    def open(cls) -> tuple[Nvml | None, str]:
        """(session, status): status is "available" or why NVML cannot be used."""
        try:
            import pynvml
        except ImportError:
            return None, "pynvml is not installed (pip install nvidia-ml-py)"
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            return None, _describe_init_error(pynvml, error)
        except OSError as error:
            return None, f"NVML unavailable: {error}"
        return cls(pynvml), "available"

    def close(self) -> None:
        self._call("nvmlShutdown")

    def handle_for(self, device: torch.device) -> Any:
        """The NVML handle of a torch CUDA device, matched by PCI bus id because NVML
        ignores CUDA_VISIBLE_DEVICES; falls back to the same index."""
        index = device.index if device.index is not None else torch.cuda.current_device()
        properties = torch.cuda.get_device_properties(index)
        bus = getattr(properties, "pci_bus_id", None)
        if bus is not None:
            domain = getattr(properties, "pci_domain_id", 0)
            slot = getattr(properties, "pci_device_id", 0)
            handle = self._call("nvmlDeviceGetHandleByPciBusId", f"{domain:08x}:{bus:02x}:{slot:02x}.0")
            if handle is not None:
                return handle
        return self._call("nvmlDeviceGetHandleByIndex", index)

    def driver_version(self) -> str | None:
        return _text(self._call("nvmlSystemGetDriverVersion"))

    def name(self, handle: Any) -> str | None:
        return _text(self._call("nvmlDeviceGetName", handle))

    def total_memory(self, handle: Any) -> int | None:
        info = self._call("nvmlDeviceGetMemoryInfo", handle)
        return int(info.total) if info is not None else None

    def clocks(self, handle: Any) -> ClockFacts:
        sm, memory = self._nvml.NVML_CLOCK_SM, self._nvml.NVML_CLOCK_MEM
        return ClockFacts(
            sm_mhz=self._call("nvmlDeviceGetClockInfo", handle, sm),
            sm_max_mhz=self._call("nvmlDeviceGetMaxClockInfo", handle, sm),
            memory_mhz=self._call("nvmlDeviceGetClockInfo", handle, memory),
            memory_max_mhz=self._call("nvmlDeviceGetMaxClockInfo", handle, memory),
        )

    def sample(self, handle: Any) -> NvmlSample:
        rates = self._call("nvmlDeviceGetUtilizationRates", handle)
        memory = self._call("nvmlDeviceGetMemoryInfo", handle)
        milliwatts = self._call("nvmlDeviceGetPowerUsage", handle)
        return NvmlSample(
            gpu_util_percent=float(rates.gpu) if rates is not None else None,
            memory_util_percent=float(rates.memory) if rates is not None else None,
            memory_used_bytes=int(memory.used) if memory is not None else None,
            power_watts=milliwatts / 1000.0 if milliwatts is not None else None,
            sm_clock_mhz=self._call("nvmlDeviceGetClockInfo", handle, self._nvml.NVML_CLOCK_SM),
        )

    def _call(self, function: str, *args: Any) -> Any:
        # Boards differ in which counters they expose; a missing one is None, not an error.
        try:
            return getattr(self._nvml, function)(*args)
        except (self._nvml.NVMLError, AttributeError, TypeError, ValueError):
            return None


def _describe_init_error(pynvml: Any, error: Exception) -> str:
    if isinstance(error, getattr(pynvml, "NVMLError_LibraryNotFound", ())):
        return "no NVIDIA driver (NVML library not found)"
    if isinstance(error, getattr(pynvml, "NVMLError_DriverNotLoaded", ())):
        return "no NVIDIA driver loaded"
    return f"NVML unavailable: {error}"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class UtilizationSampler:
    """Polls NVML every `interval_s` on a daemon thread between `start()` and `stop()`.

    Polling off the training thread keeps NVML calls out of the step; `summary()` is None
    when there was nothing to sample (no NVML, or no samples taken).
    """

    def __init__(self, nvml: Nvml | None, handle: Any, interval_s: float = 0.1) -> None:
        self.nvml = nvml
        self.handle = handle
        self.interval_s = interval_s
        self.samples: list[NvmlSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> UtilizationSampler:
        if self.nvml is not None and self.handle is not None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="verify-perf-nvml", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def __enter__(self) -> UtilizationSampler:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def _run(self) -> None:
        assert self.nvml is not None
        while True:
            self.samples.append(self.nvml.sample(self.handle))
            if self._stop.wait(self.interval_s):
                return

    def summary(self) -> UtilizationSummary | None:
        return summarize_samples(self.samples, self.interval_s)


def summarize_samples(samples: list[NvmlSample], interval_s: float) -> UtilizationSummary | None:
    if not samples:
        return None

    def values(name: str) -> list[float]:
        return [getattr(s, name) for s in samples if getattr(s, name) is not None]

    def mean(name: str) -> float | None:
        found = values(name)
        return fmean(found) if found else None

    def peak(name: str) -> float | None:
        found = values(name)
        return max(found) if found else None

    memory_peak = peak("memory_used_bytes")
    return UtilizationSummary(
        samples=len(samples),
        interval_s=interval_s,
        gpu_util_percent_mean=mean("gpu_util_percent"),
        gpu_util_percent_max=peak("gpu_util_percent"),
        memory_util_percent_mean=mean("memory_util_percent"),
        memory_used_bytes_max=int(memory_peak) if memory_peak is not None else None,
        power_watts_mean=mean("power_watts"),
        power_watts_max=peak("power_watts"),
        sm_clock_mhz_mean=mean("sm_clock_mhz"),
    )


def describe_device(device: torch.device, nvml: Nvml | None, nvml_status: str) -> DeviceFacts:
    """Facts about the device the harness runs on, from torch and (where present) NVML."""
    common = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cpu_threads": torch.get_num_threads(),
    }
    if device.type != "cuda":
        status = nvml_status if nvml_status != "available" else "available (not used: the run is on CPU)"
        return DeviceFacts(
            backend="cpu", name=_cpu_name(), total_memory_bytes=_physical_memory(), nvml=status, **common
        )
    properties = torch.cuda.get_device_properties(device)
    handle = nvml.handle_for(device) if nvml is not None else None
    use_nvml = nvml is not None and handle is not None
    return DeviceFacts(
        backend="cuda",
        name=(nvml.name(handle) if use_nvml else None) or properties.name,
        driver=nvml.driver_version() if use_nvml else None,
        total_memory_bytes=(nvml.total_memory(handle) if use_nvml else None) or properties.total_memory,
        compute_capability=f"{properties.major}.{properties.minor}",
        multiprocessors=properties.multi_processor_count,
        nvml=nvml_status if nvml is None or handle is not None else "NVML could not match the CUDA device",
        clocks=nvml.clocks(handle) if use_nvml else None,
        **common,
    )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
