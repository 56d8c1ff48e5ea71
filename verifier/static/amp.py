"""Autocast regions and AMP objects by qualified name, shared by VP306, VP307 and VP308.

An autocast region is read from its call: the device type, the dtype it casts to, and whether it
is enabled. Values that are not literals stay unknown (None) so that rules can stay silent.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from verifier.static.names import (
    ImportTable,
    has_star_args,
    is_false,
    is_true,
    keyword_arg,
    literal_string,
    method_name,
    positional_arg,
    receiver,
    terminal_name,
)

# The generic autocast takes the device type first; the per-device ones imply it.
_GENERIC_AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
_DEVICE_AUTOCAST = {
    "torch.cuda.amp.autocast": "cuda",
    "torch.cuda.amp.autocast_mode.autocast": "cuda",
    "torch.cpu.amp.autocast": "cpu",
    "torch.cpu.amp.autocast_mode.autocast": "cpu",
}
AUTOCAST = _GENERIC_AUTOCAST | frozenset(_DEVICE_AUTOCAST)
_DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}
_DTYPE_ALIASES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float": "float32"}

# Deprecated since torch 2.4 (FutureWarning), with what replaces each.
DEPRECATED_AMP = {
    "torch.cuda.amp.autocast": 'torch.autocast("cuda", ...)',
    "torch.cuda.amp.autocast_mode.autocast": 'torch.autocast("cuda", ...)',
    "torch.cpu.amp.autocast": 'torch.autocast("cpu", ...)',
    "torch.cpu.amp.autocast_mode.autocast": 'torch.autocast("cpu", ...)',
    "torch.cuda.amp.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
    "torch.cuda.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cuda", ...)',
    "torch.cpu.amp.GradScaler": 'torch.amp.GradScaler("cpu", ...)',
    "torch.cpu.amp.grad_scaler.GradScaler": 'torch.amp.GradScaler("cpu", ...)',
    "torch.cuda.amp.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda")',
    "torch.cuda.amp.autocast_mode.custom_fwd": 'torch.amp.custom_fwd(device_type="cuda")',
    "torch.cuda.amp.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
    "torch.cuda.amp.autocast_mode.custom_bwd": 'torch.amp.custom_bwd(device_type="cuda")',
}
# GradScalers whose `device` defaults to "cuda": without CUDA they warn once and disable themselves.
CUDA_DEFAULT_SCALERS = frozenset(
    {"torch.GradScaler", "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
     "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"}
)
# Frameworks whose `backward(loss)` applies the precision they were configured with.
_FRAMEWORK_BACKWARD_OWNERS = ("accelerator", "fabric", "trainer")


@dataclass(frozen=True)
class AutocastRegion:
    call: cst.Call
    device: str | None
    dtype: str | None
    enabled: bool | None  # None: decided at run time (`enabled=use_amp`, or a conditional context)

    def same_casting_as(self, other: AutocastRegion) -> bool:
        """Both regions are known to cast on the same device to the same dtype."""
        return None not in (self.device, self.dtype) and (self.device, self.dtype) == (other.device, other.dtype)


def autocast_region(item: cst.BaseExpression, imports: ImportTable) -> AutocastRegion | None:
    """The region opened by a `with` item: `torch.autocast(...)`, or one side of `a if c else b`."""
    if type(item) is cst.IfExp:
        for side in (item.body, item.orelse):
            region = autocast_region(side, imports)
            if region is not None:
                return AutocastRegion(region.call, region.device, region.dtype, None if region.enabled is not False else False)
        return None
    if type(item) is not cst.Call:
        return None
    qualified = imports.call_name(item)
    if qualified not in AUTOCAST:
        return None
    if has_star_args(item):
        return AutocastRegion(item, None, None, None)
    generic = qualified in _GENERIC_AUTOCAST
    device = _DEVICE_AUTOCAST.get(qualified) or literal_string(_argument(item, "device_type", 0 if generic else None))
    dtype_node = _argument(item, "dtype", 1)
    dtype = _dtype(dtype_node, imports) if dtype_node is not None else _DEFAULT_DTYPE.get(device or "")
    enabled_node = _argument(item, "enabled", 2 if generic else 0)
    enabled = True if enabled_node is None or is_true(enabled_node) else False if is_false(enabled_node) else None
    return AutocastRegion(item, device, dtype, enabled)


# Text that shows a module decides its numeric precision (autocast, a scaler, 16-bit dtypes).
PRECISION_CHOSEN = ("autocast", "GradScaler", "float16", "bfloat16", ".half()", "mixed_precision")


def is_backward(call: cst.Call, imports: ImportTable) -> bool:
    """`loss.backward()`, `scaler.scale(loss).backward()`, `torch.autograd.backward(...)`.

    `accelerator.backward(loss)` and `fabric.backward(loss)` are left out: the framework
    applies the precision it was configured with.
    """
    if imports.call_name(call) == "torch.autograd.backward":
        return True
    if method_name(call) != "backward":
        return False
    owner = (terminal_name(receiver(call)) or "").lower()
    return not any(word in owner for word in _FRAMEWORK_BACKWARD_OWNERS)


def _argument(call: cst.Call, keyword: str, position: int | None) -> cst.BaseExpression | None:
    arg = keyword_arg(call, keyword) or (positional_arg(call, position) if position is not None else None)
    return arg.value if arg is not None else None


def _dtype(node: cst.BaseExpression, imports: ImportTable) -> str | None:
    qualified = imports.qualified_name(node) or ""
    if qualified.startswith("torch."):
        return _DTYPE_ALIASES.get(qualified.rsplit(".", 1)[-1])
    return None
