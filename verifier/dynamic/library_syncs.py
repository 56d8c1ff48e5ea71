"""Names a sync that torch or another library made itself: which call of the user's reached it,
what the library was doing, and whether it is a device sync on CUDA.

The counter sees the frames between the user's line and the read. The outermost one that is not a
wrapper names the call the user made (`AdamW.step`, `GradScaler.step`, `clip_grad_norm_`); the
innermost frames name the operation. A few operations are known well enough to say what they do
on CUDA; any other is named by its function, and its CUDA behaviour is said to be unknown from a
CPU count (on a CUDA run every counted sync is a real one: the counter counts device tensors only).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import FrameType

import torch


@dataclass(frozen=True)
class LibraryCall:
    """api: the call in the user's code ("AdamW.step"); operation: what the library did there;
    library: the package ("torch.optim"); on_cuda: whether it syncs on CUDA (None: not known);
    cuda_note: why, and how to avoid it."""

    api: str
    operation: str
    library: str
    on_cuda: bool | None
    cuda_note: str


@dataclass(frozen=True)
class _Known:
    operation: str
    on_cuda: bool
    cuda_note: str


KNOWN: dict[tuple[str, str], _Known] = {
    # (module, function name): what the library does there.
    ("torch.optim.optimizer", "_get_value"): _Known(
        "reads the per-parameter step counter (state['step'].item())",
        False,
        "the counter is a host tensor on CUDA unless capturable=True, so the read is no device sync; "
        "fused=True does not read it at all",
    ),
    ("torch.amp.grad_scaler", "_maybe_opt_step"): _Known(
        "GradScaler.step's inf/NaN check reads found_inf (.item())",
        True,
        "one sync per step with a non-fused optimizer; fused=True (Adam, AdamW, SGD) keeps the check on the device",
    ),
    ("torch.nn.modules.batchnorm", "forward"): _Known(
        "batch norm with momentum=None reads num_batches_tracked (.item()) for its cumulative average",
        True,
        "the counter is a buffer on the device; a set momentum (the default 0.1) needs no read",
    ),
    ("torch.nn.utils.clip_grad", "_get_total_norm"): _Known(
        "clip_grad_norm_(error_if_nonfinite=True) tests the total norm for inf/NaN",
        True,
        "leave error_if_nonfinite False (the default): GradScaler already skips steps whose gradients hold inf/NaN",
    ),
}

_WRAPPER_NAMES = frozenset({"wrapper", "inner", "decorate_context", "_fn", "fn", "_call_impl", "_wrapped_call_impl"})
_TORCH_ROOT = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep


def describe(kind: str, frames: list[FrameType], real_device: bool) -> LibraryCall:
    """`frames`: the library's frames from the one that made the read (first) to the one the
    user's code called (last). `real_device`: the count ran on CUDA, not simulated on CPU."""
    named = [(_module(frame), _qualname(frame), frame) for frame in frames]
    api = _api(named)
    library = _library(named[-1][0]) if named else "unknown"
    for module, _, frame in named:
        known = KNOWN.get((module, frame.f_code.co_name))
        if known is not None:
            on_cuda = True if real_device else known.on_cuda
            return LibraryCall(api, known.operation, library, on_cuda, known.cuda_note)
    inner = next(((m, q) for m, q, _ in named if not _is_wrapper(q)), named[0][:2] if named else ("?", "?"))
    operation = f"{kind} in {inner[0]}.{inner[1]}"
    if real_device:
        return LibraryCall(api, operation, library, True, "counted on CUDA: a device tensor was read")
    return LibraryCall(api, operation, library, None, "not known from a CPU count (only a CUDA run tells)")


def _module(frame: FrameType) -> str:
    path = os.path.abspath(frame.f_code.co_filename)
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and name and name != "__main__":
        return name
    relative = path[len(_TORCH_ROOT):] if path.startswith(_TORCH_ROOT) else os.path.basename(path)
    return relative.removesuffix(".py").replace(os.sep, ".")


def _qualname(frame: FrameType) -> str:
    """The function's qualified name without what follows `.<locals>` (list comprehensions,
    generator expressions and closures read as the function that made them)."""
    qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return qualname.split(".<locals>")[0]


def _is_wrapper(qualname: str) -> bool:
    return qualname.rsplit(".", 1)[-1] in _WRAPPER_NAMES or qualname.rsplit(".", 1)[-1].startswith("_no_grad")


def _api(named: list[tuple[str, str, FrameType]]) -> str:
    """The user's call: the outermost frame that is not a decorator's wrapper or a closure, with
    the class of `self` where it has one (AdamW.step, not the Adam.step it inherits)."""
    for _, qualname, frame in reversed(named):
        if "<locals>" in getattr(frame.f_code, "co_qualname", "") or _is_wrapper(qualname):
            continue
        owner = frame.f_locals.get("self")
        if owner is not None:
            return f"{type(owner).__name__}.{frame.f_code.co_name}"
        return qualname
    return named[-1][1] if named else "?"


def _library(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "torch" and len(parts) > 2 else parts[0]
