"""Where code forces the host to wait for the device: shared by the sync rules (VP201, VP202)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from verifier.static.facts import Kind, NameFacts
from verifier.static.heat import is_model_name
from verifier.static.names import (
    ImportTable, dotted_name, is_true, keyword_arg, listed_values, method_name, positional_arg, receiver, terminal_name,
)

# Methods that copy a tensor's value to the host and so wait for every queued kernel.
SYNC_METHODS = frozenset({"item", "tolist", "numpy", "cpu"})
CONVERSIONS = frozenset({"float", "int", "bool"})
# Builtins that compare their arguments in Python: `max(t.sum(), 1)` calls `bool(1 > t.sum())`,
# `max(t)` iterates a tensor and compares its elements one by one.
COMPARING_BUILTINS = frozenset({"max", "min"})
_TEXT_BUILTINS = frozenset({"print", "str", "repr", "format"})
# The standard library's `math` works on Python floats: `math.isnan(loss)` converts a one-element
# tensor with `float()` first, a host read like `float(loss)` (TimeSformer's per-step NaN check).
_MATH_MODULE = "math."
# GradScaler methods that read its scale, kept on the device it scales for, into Python:
# `get_scale()` calls `.item()` on it, and `state_dict()` calls `get_scale()` and reads the
# growth tracker the same way (torch/amp/grad_scaler.py; the docs warn of the sync).
SCALER_READS = frozenset({"get_scale", "state_dict"})
# NumPy conversions copy a tensor's values to the host (`np.asarray(t)` calls `t.__array__()`).
_NUMPY_CONVERSIONS = frozenset({"numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray"})


def _nowhere(_node: cst.BaseExpression) -> bool:
    return False


def _is_tensor(node: cst.BaseExpression, facts: NameFacts, on_device: Callable[[cst.BaseExpression], bool]) -> bool:
    """A tensor by the type facts, or a value shown computed on the accelerator."""
    return facts.is_tensor(node) or on_device(node)


@dataclass(frozen=True)
class Sync:
    node: cst.CSTNode
    subject: cst.BaseExpression
    how: str
    # `scaler.get_scale()`: the read is the GradScaler's own, of its scale (`subject` is the scaler).
    reads_a_scaler: bool = False

    @property
    def is_explicit_read(self) -> bool:
        """A read of a value into Python (`.item()`, `float(t)`), as opposed to printing it."""
        return (
            self.how.startswith((".", _MATH_MODULE))
            or self.how.endswith("()") and self.how[:-2] in CONVERSIONS | COMPARING_BUILTINS
        )


def sync_of_call(
    call: cst.Call, facts: NameFacts, imports: ImportTable, on_device: Callable[[cst.BaseExpression], bool] = _nowhere
) -> Sync | None:
    """The host read `call` makes; `on_device` says which values are shown on the accelerator
    (a tensor there, whatever the type facts know: `max(target_scores.sum(), 1)` with
    `target_scores` returned on the device by a helper)."""
    method = method_name(call)
    owner = receiver(call)
    # Without torch imported, `.tolist()`/`.cpu()` belong to memoryviews, arrays and the like;
    # `.item()` still reads tensors handed in by other modules (a helper the loop calls).
    if method in SCALER_READS and owner is not None and not call.args and facts.kind_of(owner) is Kind.SCALER:
        return Sync(call, owner, f".{method}()", reads_a_scaler=True)
    if method in SYNC_METHODS and method != "item" and not imports.imports_module("torch"):
        return None
    if method == "numpy" and owner is not None and call.args:
        # `t.numpy(force=True)` copies a device tensor to the host first: a read like `.cpu()`.
        force = keyword_arg(call, "force") or (call.args[0] if call.args[0].keyword is None else None)
        if force is not None and is_true(force.value) and facts.kind_of(owner) not in (Kind.NUMBER, Kind.NUMPY):
            return Sync(call, owner, ".numpy(force=True)")
        return None
    if method in SYNC_METHODS and owner is not None and not call.args:
        if method == "cpu" and _is_module(owner, facts):
            return None
        if method == "numpy":
            # A device tensor's `.numpy()` raises: code that calls it works only where the tensor
            # already lives on the host (a CPU-only example), or after the `.cpu()` that synced.
            return None
        if facts.kind_of(owner) in (Kind.NUMBER, Kind.NUMPY, Kind.MODULE, Kind.OTHER):
            return None
        # `t.cpu().numpy()`: the copy already synced; reading the host copy costs nothing more.
        if type(owner) is cst.Call and sync_of_call(owner, facts, imports) is not None:
            return None
        return Sync(call, owner, f".{method}()")
    if method == "to" and owner is not None and not _is_module(owner, facts) and _moves_to_cpu(call, imports):
        # `non_blocking=True` copies into pinned host memory and returns at once: no wait here
        # (whoever reads the copy must synchronise first, which is their line's cost).
        non_blocking = keyword_arg(call, "non_blocking")
        return None if non_blocking is not None and is_true(non_blocking.value) else Sync(call, owner, '.to("cpu")')
    func = dotted_name(call.func)
    if func in CONVERSIONS and imports.qualify(func) is None and len(call.args) == 1:
        subject = call.args[0].value
        if _is_tensor(subject, facts, on_device):
            return Sync(call, subject, f"{func}()")
    if func in COMPARING_BUILTINS and imports.qualify(func) is None:
        for arg in call.args:
            if arg.keyword is None and not arg.star and _is_tensor(arg.value, facts, on_device):
                return Sync(call, arg.value, f"{func}()")
    qualified = imports.call_name(call)
    if qualified is not None and qualified.startswith(_MATH_MODULE):
        for arg in call.args:
            if arg.keyword is None and not arg.star and _is_tensor(arg.value, facts, on_device):
                return Sync(call, arg.value, f"{qualified}()")
        return None
    if qualified in _NUMPY_CONVERSIONS and call.args and call.args[0].keyword is None:
        subject = call.args[0].value
        if facts.is_tensor(subject):
            return Sync(call, subject, f"np.{qualified.rsplit('.', 1)[-1]}()")
    if func in _TEXT_BUILTINS and imports.qualify(func) is None:
        for arg in call.args:
            if arg.keyword is None and facts.is_tensor(arg.value):
                return Sync(call, arg.value, f"{func}()")
    return None


def sync_of_slice(
    subscript: cst.Subscript, facts: NameFacts, on_device: Callable[[cst.BaseExpression], bool] = _nowhere
) -> Sync | None:
    """`pred[:length]` with `length` a tensor: a slice bound is a Python int, so the tensor's
    `__index__` reads it on the host first (per sample, in a loop over a batch's lengths). An
    index that is a tensor (`x[idx]`) gathers on the device instead: no read."""
    for element in subscript.slice:
        if type(element.slice) is not cst.Slice:
            continue
        for bound in (element.slice.lower, element.slice.upper, element.slice.step):
            if bound is not None and _is_tensor(bound, facts, on_device):
                return Sync(bound, bound, "__index__()")
    return None


# Calls whose positional arguments are sizes (Python ints): a tensor there is read with
# `__index__()` first. Torch factories by qualified name; tensor methods by name.
_SIZED_FUNCTIONS = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "empty", "rand", "randn", "arange", "eye")
)
_SIZED_METHODS = frozenset({"view", "reshape", "expand", "new_zeros", "new_ones", "new_empty"})


def sync_of_size(
    call: cst.Call,
    facts: NameFacts,
    imports: ImportTable,
    on_device: Callable[[cst.BaseExpression], bool] = _nowhere,
) -> Sync | None:
    """`torch.zeros(b, lengths.max())`, `range(n)`, `x.view(b, t.sum())`: a size is a Python int,
    so a tensor given as one is read on the host first, as a slice bound is."""
    qualified = imports.call_name(call) or ""
    if not (
        qualified in _SIZED_FUNCTIONS
        or (type(call.func) is cst.Name and call.func.value == "range" and not qualified)
        or (method_name(call) in _SIZED_METHODS and not qualified)
    ):
        return None
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            continue
        for value in listed_values(arg.value):
            if _is_tensor(value, facts, on_device):
                return Sync(value, value, "__index__()")
    return None


def sync_of_test(
    test: cst.BaseExpression,
    facts: NameFacts,
    imports: ImportTable | None = None,
    on_device: Callable[[cst.BaseExpression], bool] = _nowhere,
) -> Sync | None:
    """`if t:` / `while t.any():` / `assert t` convert a tensor to bool on the host; so does
    `if (y < 0).any():` in a module that uses torch and not NumPy (the comparison is a tensor).
    A value shown on the accelerator (`on_device`) is a tensor too: `if fg_mask.sum():`."""
    if type(test) is cst.BooleanOperation:
        return sync_of_test(test.left, facts, imports, on_device) or sync_of_test(test.right, facts, imports, on_device)
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return sync_of_test(test.expression, facts, imports, on_device)
    if _is_tensor(test, facts, on_device):
        return Sync(test, test, "bool()")
    if (
        imports is not None
        and type(test) is cst.Call
        and method_name(test) in ("any", "all")
        and not test.args
        and type(receiver(test)) is cst.Comparison
        and imports.imports_module("torch")
        and not imports.imports_module("numpy")
    ):
        return Sync(test, test, "bool()")
    return None


def sync_of_fstring(part: cst.FormattedStringExpression, facts: NameFacts) -> Sync | None:
    if facts.is_tensor(part.expression):
        return Sync(part, part.expression, "f-string")
    return None


def _is_module(node: cst.BaseExpression, facts: NameFacts) -> bool:
    """`model.cpu()` moves parameters, it does not read a result back."""
    name = (terminal_name(node) or "").lower()
    return is_model_name(name) or "module" in name or facts.kind_of(node) is Kind.MODULE


def _moves_to_cpu(call: cst.Call, imports: ImportTable) -> bool:
    arg = keyword_arg(call, "device") or positional_arg(call, 0)
    if arg is None:
        return False
    value = arg.value
    if type(value) is cst.SimpleString:
        return value.evaluated_value == "cpu"
    if type(value) is cst.Call and imports.call_name(value) == "torch.device":
        first = positional_arg(value, 0)
        return first is not None and type(first.value) is cst.SimpleString and first.value.evaluated_value == "cpu"
    return False
