"""Copies to the accelerator: `.to(device)` and `.cuda()`, where they go and whether they block.

Shared by VP102 (blocking copies of batch data) and VP104 (tensors created on the host and
moved every step). A destination or a `non_blocking` value that cannot be read statically
gives None, and the rules stay silent.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from verifier.static.devices import destination
from verifier.static.facts import Kind, NameFacts
from verifier.static.heat import is_model_name
from verifier.static.names import (
    ImportTable,
    dotted_name,
    has_star_args,
    is_false,
    is_true,
    keyword_arg,
    method_name,
    positional_arg,
    receiver,
    terminal_name,
)



@dataclass(frozen=True)
class DeviceMove:
    """`source.to(device)` / `source.cuda()`: a copy of `source` onto an accelerator."""

    call: cst.Call
    source: cst.BaseExpression
    non_blocking: bool | None

    @property
    def blocks(self) -> bool:
        """Known to block the host: `non_blocking` absent or literally False."""
        return self.non_blocking is False


def device_move(call: cst.Call, imports: ImportTable, facts: NameFacts) -> DeviceMove | None:
    """The copy `call` makes onto an accelerator, or None (a dtype cast, a move to the CPU, a module)."""
    method = method_name(call)
    source = receiver(call)
    legacy = _legacy_type_move(call, method, source, facts)
    if legacy is not None:
        return legacy
    if method not in ("to", "cuda") or source is None or has_star_args(call) or is_module(source, facts):
        return None
    if method == "cuda":
        device = keyword_arg(call, "device") or positional_arg(call, 0)
        if device is not None and destination(device.value, imports) is False:
            return None
        return DeviceMove(call, source, _non_blocking(call, imports, extra_positional=1))
    device = keyword_arg(call, "device") or positional_arg(call, 0)
    if device is None or destination(device.value, imports) is not True:
        return None
    return DeviceMove(call, source, _non_blocking(call, imports, extra_positional=0 if device.keyword else 1))


def _legacy_type_move(
    call: cst.Call, method: str | None, source: cst.BaseExpression | None, facts: NameFacts
) -> DeviceMove | None:
    """The legacy typed-tensor API: `imgs.type(Tensor)` copies `imgs` to the device, and
    `Tensor(np.random.normal(...))` copies its one data argument there (`Tensor(n, 1)` takes sizes
    and copies nothing), where `Tensor` is a CUDA tensor type (`torch.cuda.FloatTensor`). Both
    copies block: `.type` unless given `non_blocking=True`, the constructor always."""
    if has_star_args(call):
        return None
    if method == "type" and source is not None and not is_module(source, facts):
        target = keyword_arg(call, "dtype") or positional_arg(call, 0)
        if target is None or not facts.names_device_tensor_type(target.value):
            return None
        flag = keyword_arg(call, "non_blocking") or positional_arg(call, 1)
        blocking = flag is None or is_false(flag.value)
        return DeviceMove(call, source, False if blocking else True if is_true(flag.value) else None)
    if len(call.args) == 1 and call.args[0].keyword is None and facts.names_device_tensor_type(call.func):
        data = call.args[0].value
        # Data is a built value (`np.random.normal(...)`, a list) or a name known to hold an array
        # or a tensor; `Tensor(batch_size)` with a size allocates on the device and copies nothing.
        built = type(data) in (cst.Call, cst.List, cst.Tuple, cst.ListComp) and not _is_size(data)
        if built or facts.kind_of(data) in (Kind.NUMPY, Kind.TENSOR):
            return DeviceMove(call, data, False)
    return None


def _is_size(node: cst.BaseExpression) -> bool:
    """`x.size(0)`, `len(batch)`, `int(n)`: a count, not data."""
    return type(node) is cst.Call and (
        method_name(node) in ("size", "numel", "dim") or dotted_name(node.func) in ("len", "int")
    )


def is_module(node: cst.BaseExpression, facts: NameFacts) -> bool:
    """`model.to(device)` moves parameters once; it is not a per-batch data copy."""
    name = (terminal_name(node) or "").lower()
    return is_model_name(name) or "module" in name or facts.kind_of(node) is Kind.MODULE


def _non_blocking(call: cst.Call, imports: ImportTable, extra_positional: int) -> bool | None:
    """The `non_blocking` flag: keyword, or a positional after the device (`.to(dev, None, True)`)."""
    keyword = keyword_arg(call, "non_blocking")
    if keyword is not None:
        return True if is_true(keyword.value) else False if is_false(keyword.value) else None
    rest = [a.value for a in call.args if a.keyword is None][extra_positional:]
    if any(is_true(value) for value in rest):
        return True
    # `.to(device, dtype)`: a dtype or None leaves the copy blocking; anything else may be the flag.
    return False if all(_is_dtype_or_none(value, imports) for value in rest) else None


def _is_dtype_or_none(node: cst.BaseExpression, imports: ImportTable) -> bool:
    if is_false(node) or (type(node) is cst.Name and node.value == "None"):
        return True
    if (imports.qualified_name(node) or "").startswith("torch."):
        return True
    return "dtype" in (terminal_name(node) or "")
