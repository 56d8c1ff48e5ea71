"""Counts host-device synchronisation points while a training step runs.

Two views of the step are joined. A `TorchFunctionMode` sees tensor calls as the user wrote
them (`.item()`, `if t:`, `print(t)`, `.cpu()`, `.to(device)`), which names the kind of sync;
a `TorchDispatchMode` sees the operators underneath, including those run by backward hooks
and custom `backward` functions (where function modes are off) and every operator PyTorch
tags as having a data-dependent output (`Tag.dynamic_output_shape`: `nonzero`, boolean masks,
`bincount`, `repeat_interleave`, `unique`; `Tag.data_dependent_output`: the scalar reads
behind `.item()`, `x in t`, `one_hot` without `num_classes`). One user call counts once.

A read counts only when the tensor lives on an accelerator. On a CPU run nothing does, so
the counter *simulates* one: a tensor counts as device-resident unless it is known to be host
data (made by a factory call without `device=`, `.cpu()`, `.to("cpu")`, or computed only from
host data); the report says the CPU figures are "what would sync on an accelerator".
Blocking host-to-device copies (`.to(device)`/`.cuda()` without `non_blocking=True`,
`torch.tensor(data, device=...)`) count too: the host waits for the copy.

Each sync is charged to the first frame in the user's code: frames of torch, of verify-perf's
harness, of the standard library (`logging`, string formatting) and of installed third-party
packages (tqdm, frameworks) are skipped. When torch or a third-party package made the call
itself (GradScaler's inf check) it is a library sync the user cannot remove. Counting slows a
step several times, so the harness counts in a separate pass that is never timed.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import warnings
from collections import Counter
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from verifier.dynamic.library_syncs import LibraryCall, describe
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
        "__contains__",
        "nonzero",
        "argwhere",
        "masked_select",
        "unique",
        "unique_consecutive",
        "bincount",
        "equal",
        "allclose",
    }
)
"""Calls whose result size or value the host needs right away, on any accelerator."""

HOST_TAG = "_verify_perf_host"
"""Attribute marking a tensor as host data during a simulated (CPU) count."""

_FACTORIES = frozenset(
    {
        "tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "arange", "range",
        "linspace", "logspace", "rand", "randn", "randint", "randperm", "eye", "scalar_tensor",
    }
)
_COPIES_DATA = frozenset({"tensor", "as_tensor", "asarray"})
_HOST_RESULTS = frozenset({"cpu", "numpy"})
_DATA_DEPENDENT = (torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output)

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_HARNESS_DIR = os.path.dirname(_THIS_FILE) + os.sep
_DISPATCH_WRAPPERS = frozenset(
    os.path.join(_TORCH_DIR, name)
    for name in ("overrides.py", "_tensor.py", "functional.py", "_jit_internal.py", os.path.join("utils", "_python_dispatch.py"))
)
_DYNAMO_WRAPPERS = (os.path.join(_TORCH_DIR, "_dynamo") + os.sep, os.path.join(_TORCH_DIR, "_compile.py"))
"""`torch._disable_dynamo` wraps the dispatch-mode entry: frames that only forward the call."""
"""torch files whose functions only forward a user's call (e.g. `Tensor.__format__` passes
through `handle_torch_function`); a sync reached through them is still the user's."""


def _library_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(standard library folders, third-party package folders) of the running interpreter."""
    paths = sysconfig.get_paths()
    third = tuple({os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib")})
    stdlib = tuple({os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")} - set(third))
    return stdlib, third


_STDLIB_DIRS, _THIRD_PARTY_DIRS = _library_dirs()


@dataclass(frozen=True)
class SyncEvent:
    """One counted call. `user_location` is the first frame in the user's code; `internal`
    says whether torch or a third-party package made the call itself, and `library` then names
    the call and what the library was doing."""

    kind: str
    user_location: str
    internal: bool
    library: LibraryCall | None = None


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


class Residency:
    """Where a tensor lives for the count: its real device, or on a simulated (CPU) run the
    accelerator unless it is tagged as host data."""

    def __init__(self, simulated: bool) -> None:
        self.simulated = simulated

    def on_accelerator(self, tensor: Any) -> bool:
        if not isinstance(tensor, torch.Tensor):
            return False
        kind = tensor.device.type
        if kind not in ("cpu", "meta"):
            return True
        if not self.simulated or kind != "cpu":
            return False
        # Parameters and everything autograd tracks train on the accelerator whatever their origin.
        return isinstance(tensor, nn.Parameter) or tensor.requires_grad or not getattr(tensor, HOST_TAG, False)

    def result_is_host(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | None:
        """Whether a call's result is host data (simulated runs); None: leave the result as it is."""
        if name in _HOST_RESULTS:
            return True
        if name == "cuda":
            return False
        if name in _FACTORIES and not _tensors(args):
            return _target_device(args, kwargs, name) in (None, "cpu")
        if name == "to":
            target = _target_device(args[1:], kwargs, name)
            if target is not None:
                return target == "cpu"
        inputs = _tensors((args, kwargs))
        return bool(inputs) and not any(self.on_accelerator(t) for t in inputs)

    def tag(self, result: Any, host: bool) -> None:
        for tensor in _tensors(result):
            try:
                setattr(tensor, HOST_TAG, host)
            except (AttributeError, RuntimeError):
                pass


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def _target_device(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> str | None:
    """The device a factory or `.to()` names: "cpu" only when the host is named explicitly
    (a string or a CPU tensor's device); any other named device is the run's accelerator."""
    candidates = [kwargs.get("device")]
    if name == "to":
        candidates += list(args)
    for value in candidates:
        if isinstance(value, str) and not value.startswith(("cpu", "cuda", "mps", "xpu", "meta")):
            continue
        if isinstance(value, str):
            return "cpu" if value.startswith("cpu") else "accelerator"
        if isinstance(value, torch.device):
            return "accelerator"  # the run's device: what `device` arguments carry
        if isinstance(value, torch.Tensor) and name == "to":
            return "cpu" if getattr(value, HOST_TAG, False) else "accelerator"
    return None


def is_sync_call(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], residency: Residency | None = None
) -> str | None:
    """The kind of sync a call named `name` forces, or None. Reads count only from an
    accelerator-resident tensor; copies count device-to-host, or host-to-device when blocking."""
    residency = residency or Residency(simulated=False)
    first = args[0] if args else None
    if name in ALWAYS_SYNC:
        return name if any(residency.on_accelerator(t) for t in _tensors(args[:2])) else None
    if name in ("__getitem__", "__setitem__") and len(args) > 1:
        return name if _has_bool_mask(args[1]) and residency.on_accelerator(first) else None
    if name == "where" and len(args) + len(kwargs) == 1:
        return name if residency.on_accelerator(first) else None
    if name == "one_hot" and len(args) < 2 and kwargs.get("num_classes", -1) == -1:
        return name if residency.on_accelerator(first) else None
    if name == "repeat_interleave" and "output_size" not in kwargs:
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        return name if isinstance(repeats, torch.Tensor) and residency.on_accelerator(repeats) else None
    if name in ("to", "cuda") and isinstance(first, torch.Tensor):
        return _copy_kind(name, first, args[1:], kwargs, residency)
    if name in _COPIES_DATA and kwargs.get("device") is not None and not _tensors(args):
        if _target_device((), kwargs, name) == "accelerator" and (residency.simulated or _real_accelerator(kwargs["device"])):
            return "blocking host-to-device copy"
    return None


def _real_accelerator(device: Any) -> bool:
    try:
        return torch.device(device).type not in ("cpu", "meta")
    except (TypeError, RuntimeError):
        return False


def _copy_kind(
    name: str, tensor: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any], residency: Residency
) -> str | None:
    non_blocking = bool(kwargs.get("non_blocking")) or any(a is True for a in args if isinstance(a, bool))
    source_on_device = residency.on_accelerator(tensor)
    if name == "cuda":
        return None if source_on_device or non_blocking else "blocking host-to-device copy"
    if not residency.simulated:
        try:
            target, _, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        except (TypeError, RuntimeError):
            return None
        if target is None or target.type == tensor.device.type:
            return None
        if target.type == "cpu":
            return "to" if source_on_device else None
        return None if non_blocking or tensor.device.type != "cpu" else "blocking host-to-device copy"
    target = _target_device(args, kwargs, "to")
    if target == "cpu":
        return "to" if source_on_device else None
    if target == "accelerator" and not source_on_device and not non_blocking:
        return "blocking host-to-device copy"
    return None


def _has_bool_mask(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return index.dtype == torch.bool
    if isinstance(index, (tuple, list)):
        return any(isinstance(part, torch.Tensor) and part.dtype == torch.bool for part in index)
    return False


class _OperatorWatch(TorchDispatchMode):
    """The counter's view below the Python API: operators with data-dependent outputs, also
    where function modes are off (backward hooks, custom backward)."""

    def __init__(self, counter: SyncCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        if any(tag in func.tags for tag in _DATA_DEPENDENT):
            self.counter._operator(func, args)
        return func(*args, **kwargs)


_BACKWARD = frozenset({"backward", "grad"})
"""Calls that run user hooks and custom backward functions: their syncs count one by one."""


class HostDataTags(TorchFunctionMode):
    """Tags host data while a simulated (CPU) run is set up, so that tensors made before the
    count (a lengths table, a lookup index) are known as host data during it."""

    def __init__(self) -> None:
        super().__init__()
        self.residency = Residency(simulated=True)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        host = self.residency.result_is_host(getattr(func, "__name__", ""), args, kwargs)
        if host is not None:
            self.residency.tag(result, host)
        return result


class SyncCounter(TorchFunctionMode):
    """Use as a context manager around the steps to count; then read `summary(steps)`.

    `simulated` (default: when no CUDA device is available) counts what would sync on an
    accelerator during a CPU run. Threads that do not run the step (DataLoader pin-memory
    threads, samplers) are not counted: modes are per thread. `torch.cuda.synchronize` is
    patched while counting because it is not a tensor call; code that imported it by name
    before the counter started is not seen.
    """

    def __init__(self, simulated: bool | None = None) -> None:
        super().__init__()
        self.residency = Residency(not torch.cuda.is_available() if simulated is None else simulated)
        self.events: list[SyncEvent] = []
        self._original_synchronize: Any = None
        self._watch = _OperatorWatch(self)
        self._call: list[Any] | None = None  # [name, accelerator input?, counted?] of the outermost call

    def __enter__(self) -> SyncCounter:
        self._original_synchronize = torch.cuda.synchronize
        torch.cuda.synchronize = self._counting_synchronize
        self._watch.__enter__()
        return super().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        torch.cuda.synchronize = self._original_synchronize
        super().__exit__(*exc_info)
        self._watch.__exit__(*exc_info)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if self._call is not None or name in _BACKWARD:
            return func(*args, **kwargs)
        kind = is_sync_call(name, args, kwargs, self.residency)
        if kind is not None:
            self._record(kind, sys._getframe(1))
        resident = any(self.residency.on_accelerator(t) for t in _tensors(args[:2]))
        self._call = [name, resident, kind is not None or name in ALWAYS_SYNC]
        try:
            result = func(*args, **kwargs)
        finally:
            self._call = None
        if self.residency.simulated:
            host = self.residency.result_is_host(name, args, kwargs)
            if host is not None:
                self.residency.tag(result, host)
        return result

    def _operator(self, func: Any, args: tuple[Any, ...]) -> None:
        """A data-dependent operator ran: once per outermost user call, or on its own in backward."""
        if self._call is not None:
            name, resident, counted = self._call
            # CPU kernels read values freely where accelerator kernels do not: a simulated
            # count trusts only the calls it knows (counted above), a real one every operator.
            if not counted and resident and not self.residency.simulated:
                self._call[2] = True
                self._record(name, sys._getframe(2))
            return
        if any(self.residency.on_accelerator(t) for t in _tensors(args[:2])):
            op = func.overloadpacket.__name__
            kind = "item" if op == "_local_scalar_dense" else op
            self._record(f"{kind} (in backward or a hook)", sys._getframe(2))

    def _counting_synchronize(self, *args: Any, **kwargs: Any) -> Any:
        self._record("cuda.synchronize", sys._getframe(1))
        return self._original_synchronize(*args, **kwargs)

    def _record(self, kind: str, frame: FrameType | None) -> None:
        caller = _skip_forwarding_frames(frame)
        internal = caller is not None and _origin(caller) in ("torch", "third-party")
        user, library_frames = caller, []
        while user is not None and _origin(user) != "user":
            if _origin(user) in ("torch", "third-party"):
                library_frames.append(user)
            user = user.f_back
        library = describe(kind, library_frames, not self.residency.simulated) if internal else None
        self.events.append(SyncEvent(kind, _location(user if user is not None else caller), internal, library))

    def summary(self, steps: int) -> SyncSummary:
        if steps < 1:
            raise ValueError("steps must be at least 1")
        user = Counter((e.user_location, e.kind) for e in self.events if not e.internal)
        library = Counter((e.user_location, e.kind, e.library) for e in self.events if e.internal)
        return SyncSummary(
            steps=steps,
            user_total=sum(user.values()),
            library_total=sum(library.values()),
            user_sites=_sites(user),
            library_sites=_library_sites(library),
        )


def _skip_forwarding_frames(frame: FrameType | None) -> FrameType | None:
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path != _THIS_FILE and path not in _DISPATCH_WRAPPERS and not path.startswith(_DYNAMO_WRAPPERS):
            return frame
        frame = frame.f_back
    return None


def _origin(frame: FrameType) -> str:
    """"torch", "harness", "stdlib", "third-party" or "user"."""
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_TORCH_DIR):
        return "torch"
    if path.startswith(_HARNESS_DIR):
        return "harness"
    if path.startswith(_THIRD_PARTY_DIRS):
        return "third-party"
    if path.startswith(_STDLIB_DIRS) or frame.f_code.co_filename.startswith("<frozen"):
        return "stdlib"
    return "user"


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


def _library_sites(counts: Counter[tuple[str, str, LibraryCall | None]]) -> tuple[SyncSite, ...]:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1]))
    return tuple(
        SyncSite(
            location=location, kind=kind, count=count,
            call=call.api if call else "", operation=call.operation if call else "",
            library=call.library if call else "", on_cuda=call.on_cuda if call else None,
            cuda_note=call.cuda_note if call else "",
        )
        for (location, kind, call), count in ordered
    )


class LineTrace:
    """Which lines of the user's own files ran while counting (`sys.settrace`, untimed pass);
    the evidence join says "not observed at runtime" for a per-step finding on lines that never ran.
    The previous trace function (a debugger, coverage) is put back on exit."""

    def __init__(self) -> None:
        self.lines: dict[str, set[int]] = {}
        self._previous: Any = None
        self._origins: dict[str, bool] = {}

    def __enter__(self) -> LineTrace:
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        sys.settrace(self._previous)

    def _call(self, frame: FrameType, event: str, arg: Any) -> Any:
        filename = frame.f_code.co_filename
        user = self._origins.get(filename)
        if user is None:
            user = self._origins[filename] = _origin(frame) == "user" and os.path.isfile(filename)
        if not user:
            return None
        lines = self.lines.setdefault(_location(frame).rpartition(":")[0], set())
        lines.add(frame.f_lineno)

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        return local

    def executed(self) -> dict[str, tuple[int, ...]]:
        return {path: tuple(sorted(lines)) for path, lines in sorted(self.lines.items())}


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
