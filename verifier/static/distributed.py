"""Distributed training calls by what they do: collectives, barriers, model wrappers.

Shared by the Distributed rules (VP601-VP604). Names are compared qualified (`dist.barrier`,
`from torch.distributed import barrier`); the Accelerate and Fabric objects have no importable
type at their call sites, so their methods are recognised on receivers named for them.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import ImportTable, keyword_arg, method_name, positional_arg, receiver, terminal_name

_DIST = "torch.distributed."
# Collective -> (index of the positional argument that holds the result, its keyword).
_IN_PLACE_COLLECTIVES = {
    "all_reduce": (0, "tensor"),
    "reduce": (0, "tensor"),
    "all_gather": (0, "tensor_list"),
    "all_gather_into_tensor": (0, "output_tensor"),
    "all_gather_object": (0, "object_list"),
    "gather": (1, "gather_list"),
    "gather_object": (1, "object_gather_list"),
}
# Results that are Python objects on the host from the start (pickled and copied back);
# `accelerator.check_trigger()` reduces its stop flag across ranks and returns it read as a bool.
OBJECT_COLLECTIVES = frozenset({"all_gather_object", "gather_object", "check_trigger"})
# `accelerator.gather(t)` returns the gathered tensor instead of filling an argument.
_RETURNING_COLLECTIVES = frozenset({"gather", "reduce", "gather_for_metrics"})
_BARRIERS = frozenset({_DIST + "barrier", _DIST + "monitored_barrier"})


def collective_name(call: cst.Call, imports: ImportTable) -> str | None:
    """`all_reduce` for `dist.all_reduce(t)`, `gather` for `accelerator.gather(t)`; else None."""
    qualified = imports.call_name(call) or ""
    if qualified.startswith(_DIST):
        name = qualified[len(_DIST):]
        return name if name in _IN_PLACE_COLLECTIVES else None
    method = method_name(call)
    if (method in _RETURNING_COLLECTIVES or method == "check_trigger") and _is_accelerator(receiver(call)):
        return method
    return None


def collective_output(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The argument a `torch.distributed` collective writes its result into; None when it
    returns the result (Accelerate) or the argument cannot be found."""
    where = _IN_PLACE_COLLECTIVES.get(name)
    if where is None or receiver(call) is not None and _is_accelerator(receiver(call)):
        return None
    index, keyword = where
    arg = keyword_arg(call, keyword) or positional_arg(call, index)
    return arg.value if arg is not None else None


def is_barrier(call: cst.Call, imports: ImportTable) -> bool:
    """`dist.barrier()`, `accelerator.wait_for_everyone()`, `fabric.barrier()`."""
    if imports.call_name(call) in _BARRIERS:
        return True
    method = method_name(call)
    owner = receiver(call)
    if method == "wait_for_everyone":
        return _is_accelerator(owner)
    return method == "barrier" and "fabric" in (terminal_name(owner) or "").lower()


def _is_accelerator(node: cst.BaseExpression | None) -> bool:
    return node is not None and "accelerator" in (terminal_name(node) or "").lower()


# What wraps a model so that its backward communicates gradients.
_DDP = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"})
_FSDP1 = "FullyShardedDataParallel"


def wrapper_kind(call: cst.Call, imports: ImportTable) -> str | None:
    """"DDP", "FSDP" (both have `no_sync()`), "FSDP2" (`fully_shard`) or "Accelerate"
    (`accelerator.prepare(...)`) for a call that wraps a model; else None."""
    qualified = imports.call_name(call) or ""
    if qualified in _DDP:
        return "DDP"
    if qualified.startswith(_DIST) and qualified.endswith(_FSDP1):
        return "FSDP"
    if qualified.startswith(_DIST) and qualified.endswith(".fully_shard"):
        return "FSDP2"
    if method_name(call) == "prepare" and _is_accelerator(receiver(call)) and call.args:
        return "Accelerate"
    return None


_DATA_PARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)
_DATA_PARALLEL_FUNCTIONS = frozenset({"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"})


def data_parallel_kind(call: cst.Call, imports: ImportTable) -> str | None:
    """"module" for `nn.DataParallel(model)`, "function" for `nn.parallel.data_parallel(...)`."""
    qualified = imports.call_name(call)
    if qualified in _DATA_PARALLEL or imports.library_base(call.func) in _DATA_PARALLEL:
        return "module"  # a project subclass (`CustomDataParallel(net)`) replicates all the same
    if qualified in _DATA_PARALLEL_FUNCTIONS:
        return "function"
    return None
