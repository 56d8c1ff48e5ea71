"""Counts host-device synchronisation points while a training step runs.

A `TorchFunctionMode` sees every tensor-level call made from Python, on CPU tensors too,
so the count works without a GPU: it counts the calls that *would* stall the host on an
accelerator (`.item()`, `if t:`, `print(t)`, masked indexing, ...). Each call is charged
to the code that made it: when the direct caller is torch itself (GradScaler's inf check,
Adam's step counter) it is a library-internal sync the user cannot remove; otherwise it
is a user sync at that file and line. The mode roughly doubles the step time, so the
harness counts in a separate pass that is never timed.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections import Counter
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from verifier.dynamic.results import SyncSite

ALWAYS_SYNC = frozenset(
    {
        "item",
        "tolist",
        "numpy",
        "cpu",
        "__bool__",
        "__float__",
        "__int__",
        "__index__",
        "__complex__",
        "__format__",
        "__repr__",
        "__array__",
        "nonzero",
        "argwhere",
        "masked_select",
        "unique",
        "equal",
        "allclose",
    }
)
"""Calls whose result size or value the host needs right away, on any accelerator."""

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_DISPATCH_WRAPPERS = frozenset(
    os.path.join(_TORCH_DIR, name) for name in ("overrides.py", "_tensor.py", "functional.py", "_jit_internal.py")
)
"""torch files whose functions only forward a user's call (e.g. `Tensor.__format__` passes
through `handle_torch_function`); a sync reached through them is still the user's."""


@dataclass(frozen=True)
class SyncEvent:
    """One counted call. `user_location` is the first frame outside torch; `internal`
    says whether torch itself made the call (then `user_location` is what triggered it)."""

    kind: str
    user_location: str
    internal: bool


@dataclass(frozen=True)
class SyncSummary:
    steps: int
    user_total: int
    library_total: int
    user_sites: tuple[SyncSite, ...]
    library_sites: tuple[SyncSite, ...]

    @property
    def user_per_step(self) -> float:
        return self.user_total / self.steps

    @property
    def library_per_step(self) -> float:
        return self.library_total / self.steps


def is_sync_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a call named `name` with these arguments forces a host-device sync."""
    if name in ALWAYS_SYNC:
        return True
    if name in ("__getitem__", "__setitem__") and len(args) > 1:
        return _has_bool_mask(args[1])
    if name == "where":
        return len(args) + len(kwargs) == 1
    if name == "to" and args and isinstance(args[0], torch.Tensor):
        return _copies_to_host(args[0], args[1:], kwargs)
    return False


def _has_bool_mask(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return index.dtype == torch.bool
    if isinstance(index, (tuple, list)):
        return any(isinstance(part, torch.Tensor) and part.dtype == torch.bool for part in index)
    return False


def _copies_to_host(tensor: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    # `.to(device)` is the recommended host-to-device move; only device-to-host stalls.
    if tensor.device.type == "cpu":
        return False
    try:
        target, _, _, _ = torch._C._nn._parse_to(*args, **kwargs)
    except (TypeError, RuntimeError):
        return False
    return target is not None and target.type == "cpu"


class SyncCounter(TorchFunctionMode):
    """Use as a context manager around the steps to count; then read `summary(steps)`.

    Only the thread that entered the counter is counted (DataLoader pin-memory threads and
    samplers are not the training step). `torch.cuda.synchronize` is patched while
    counting because it is not a tensor call; code that imported it by name before the
    counter started is not seen.
    """

    def __init__(self) -> None:
        super().__init__()
        self.events: list[SyncEvent] = []
        self._thread = threading.get_ident()
        self._original_synchronize: Any = None

    def __enter__(self) -> SyncCounter:
        self._thread = threading.get_ident()
        self._original_synchronize = torch.cuda.synchronize
        torch.cuda.synchronize = self._counting_synchronize
        return super().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        torch.cuda.synchronize = self._original_synchronize
        super().__exit__(*exc_info)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if threading.get_ident() == self._thread and is_sync_call(name, args, kwargs):
            self._record(name, sys._getframe(1))
        return func(*args, **kwargs)

    def _counting_synchronize(self, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == self._thread:
            self._record("cuda.synchronize", sys._getframe(1))
        return self._original_synchronize(*args, **kwargs)

    def _record(self, kind: str, frame: FrameType | None) -> None:
        caller = _skip_forwarding_frames(frame)
        internal = caller is not None and _in_torch(caller)
        user = caller
        while user is not None and _in_torch(user):
            user = user.f_back
        self.events.append(SyncEvent(kind, _location(user), internal))

    def summary(self, steps: int) -> SyncSummary:
        if steps < 1:
            raise ValueError("steps must be at least 1")
        user = Counter((e.user_location, e.kind) for e in self.events if not e.internal)
        library = Counter((e.user_location, e.kind) for e in self.events if e.internal)
        return SyncSummary(
            steps=steps,
            user_total=sum(user.values()),
            library_total=sum(library.values()),
            user_sites=_sites(user),
            library_sites=_sites(library),
        )


def _skip_forwarding_frames(frame: FrameType | None) -> FrameType | None:
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path != _THIS_FILE and path not in _DISPATCH_WRAPPERS:
            return frame
        frame = frame.f_back
    return None


def _in_torch(frame: FrameType) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(_TORCH_DIR)


def _location(frame: FrameType | None) -> str:
    if frame is None:
        return "<unknown>"
    path = frame.f_code.co_filename
    try:
        relative = os.path.relpath(path)
        path = path if relative.startswith("..") else relative
    except ValueError:
        pass
    return f"{path}:{frame.f_lineno}"


def _sites(counts: Counter[tuple[str, str]]) -> tuple[SyncSite, ...]:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(SyncSite(location=location, kind=kind, count=count) for (location, kind), count in ordered)


class CudaSyncDebugWarnings:
    """Counts the warnings `torch.cuda.set_sync_debug_mode("warn")` raises (GPU only).

    The CUDA runtime flags copy-and-sync and stream-sync paths the Python-level counter can
    miss (e.g. inside C++ ops); it does not flag an explicit `torch.cuda.synchronize()`.
    The mode is experimental, so any failure to set it leaves `count` as None.
    """

    def __init__(self) -> None:
        self.count: int | None = None
        self._previous: Any = None
        self._catcher: Any = None
        self._records: list[Any] = []

    def __enter__(self) -> CudaSyncDebugWarnings:
        if not torch.cuda.is_available():
            return self
        try:
            self._previous = torch.cuda.get_sync_debug_mode()
            self._catcher = warnings.catch_warnings(record=True)
            self._records = self._catcher.__enter__()
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
        except (RuntimeError, AttributeError):
            self._restore()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._catcher is None:
            return
        self.count = sum(1 for record in self._records if "synchroniz" in str(record.message))
        self._restore()

    def _restore(self) -> None:
        if self._previous is not None:
            torch.cuda.set_sync_debug_mode(self._previous)
        if self._catcher is not None:
            self._catcher.__exit__(None, None, None)
            self._catcher = None
