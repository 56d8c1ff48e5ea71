"""Peak memory per mode, its split, and an honest statement of what the numbers cover.

On CUDA the allocator gives each interleaved mode's tensor peak (CUDA_INTERLEAVED_METHOD).
PyTorch keeps no such counter for CPU tensors, so on CPU no tensor peak is reported; the
process's resident-set high-water mark is kept in a separate field and labelled as what it is,
and the split is an estimate from PyTorch's memory tracker on fake tensors.
"""

from __future__ import annotations

import re
import sys

import torch

from verifier.dynamic.results import MemorySplit

CUDA_INTERLEAVED_METHOD = (
    "CUDA allocator: what the mode keeps between steps (memory_allocated after warm-up minus before setup) "
    "plus its largest rise during a timed repeat (max_memory_allocated after reset_peak_memory_stats, minus "
    "memory_allocated at the repeat's start): tensors only, so the modes' interleaved runs do not mix"
)
CPU_METHOD = (
    "not measured on CPU: PyTorch keeps no peak counter for CPU tensors; "
    "process_rss_peak_bytes is the whole-process resident high-water mark (interpreter, "
    "libraries and allocator slack included, DataLoader workers excluded), not a tensor peak"
)
_STATUS = "/proc/self/status"


def rss_high_water() -> int | None:
    try:
        with open(_STATUS) as handle:
            match = re.search(r"^VmHWM:\s+(\d+)\s+kB", handle.read(), re.MULTILINE)
    except OSError:
        match = None
    if match:
        return int(match.group(1)) * 1024
    try:
        import resource

        # ru_maxrss is in kilobytes on Linux, in bytes on macOS.
        scale = 1 if sys.platform == "darwin" else 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    except (ImportError, OSError):
        return None


SPLIT_METHOD = (
    "CUDA allocator peak of the timed steps; parameters (with buffers), gradients and optimizer state counted "
    "from their tensors, activations/other = peak minus those"
)
ESTIMATE_METHOD = (
    "estimate, not a measurement: PyTorch's memory tracker (torch.distributed._tools.mem_tracker) over "
    "two steps under FakeTensorMode (no memory allocated), CPU autocast"
)


def _bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def measured_split(peak_bytes: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> MemorySplit:
    """The CUDA peak split by counting the persistent tensors; the rest is what AMP can change.
    Tied weights count once (`parameters()` yields each tensor once); buffers count with the
    parameters, as PyTorch's memory tracker counts them for the CPU estimate."""
    parameters = [p for p in model.parameters()]
    params = _bytes(parameters) + _bytes(model.buffers())
    grads = _bytes(p for p in parameters if p.requires_grad)
    state = _bytes(value for entry in optimizer.state.values() for value in entry.values())
    rest = max(0, peak_bytes - params - grads - state)
    return MemorySplit(peak_bytes, params, grads, state, rest, estimated=False, method=SPLIT_METHOD)


def estimate_split(build, step, steps: int = 2) -> MemorySplit | str:
    """Run `build() -> (model, optimizer)` and `step(model, optimizer)` under FakeTensorMode with
    PyTorch's memory tracker; returns the peak split, or why it could not be estimated."""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.distributed._tools.mem_tracker import MemTracker

        with FakeTensorMode():
            model, optimizer = build()
            tracker = MemTracker()
            tracker.track_external(model, optimizer)
            with tracker:
                for index in range(steps):
                    step(model, optimizer)
                    if index == 0:
                        tracker.reset_mod_stats()
            peak = tracker.get_tracker_snapshot("peak")
    except Exception as error:  # noqa: BLE001 - an estimate that cannot be made is said, not raised
        return f"not estimated: {type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
    figures = {str(kind).rsplit(".", 1)[-1]: value for kind, value in next(iter(peak.values())).items()}
    params = int(figures.get("PARAM", 0) + figures.get("BUFFER", 0))
    grads, state = int(figures.get("GRAD", 0)), int(figures.get("OPT", 0))
    total = int(figures.get("Total", 0))
    return MemorySplit(total, params, grads, state, max(0, total - params - grads - state), estimated=True, method=ESTIMATE_METHOD)
