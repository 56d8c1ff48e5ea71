"""The `self.` attributes whose place one method cannot take from another.

The places model keeps `self.` attributes per class in walk order, so a method reads whatever
the method written above it last put there. That holds when every binding of the attribute agrees;
it is a false proof when they do not: AudioLM's trainers register `steps` as a buffer in `__init__`
(it lives wherever the module is moved, the host by default) and only `load()`, run when resuming,
rebinds it on the device, so `int(self.steps.item())` in `train_step()` is no device read by
default. A method starts such an attribute unknown unless it bound it itself.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import keyword_arg, literal_string, method_name, positional_arg, receiver
from verifier.static.walk import iter_descendants

# `self.register_buffer("steps", t)` / `register_parameter`: an attribute that moves with the module.
REGISTERS = frozenset({"register_buffer", "register_parameter"})
# Keywords that put a new tensor on a device, and methods that move one there.
_DEVICE_KEYWORDS = ("device",)
_MOVES = frozenset({"cuda", "to"})


def unsettled_attributes(node: cst.ClassDef) -> frozenset[str]:
    """Attributes two methods of the class bind in disagreeing ways: one registers it as a buffer or
    parameter, or makes it on the host, and another binds it otherwise."""
    kinds: dict[str, set[str]] = {}
    for statement in node.body.body:
        if type(statement) is not cst.FunctionDef:
            continue
        for attribute, kind in _bindings(statement):
            kinds.setdefault(attribute, set()).add(kind)
    return frozenset(
        attribute for attribute, found in kinds.items()
        if len(found) > 1 and found & {"registered", "host"}
    )


def _bindings(method: cst.FunctionDef) -> set[tuple[str, str]]:
    """(attribute, how) for each `self.<attribute>` the method binds: "registered", "host" (a torch
    factory with no device), "device" (a factory with a device, or a move), or "other"."""
    found: set[tuple[str, str]] = set()
    for node in iter_descendants(method.body):
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                attribute = _self_attribute(target.target)
                if attribute is not None:
                    found.add((attribute, _how(node.value)))
        elif kind is cst.AnnAssign and node.value is not None:
            attribute = _self_attribute(node.target)
            if attribute is not None:
                found.add((attribute, _how(node.value)))
        # `self.update_count += 1` on a registered buffer updates it in place, where it lives: no
        # binding of its own (on a Python number it rebinds a number, which no buffer is).
        elif kind is cst.Call:
            registered = registered_attribute(node)
            if registered is not None:
                found.add((registered[0], "registered"))
    return found


def registered_attribute(call: cst.Call) -> tuple[str, cst.BaseExpression | None] | None:
    """`self.register_buffer("steps", t)`: the attribute's name and the value registered (None
    when not given), for a literal name on `self`; else None."""
    if method_name(call) not in REGISTERS:
        return None
    owner = receiver(call)
    name = positional_arg(call, 0) or keyword_arg(call, "name")
    text = literal_string(name.value) if name is not None else None
    if type(owner) is not cst.Name or owner.value != "self" or not text or not text.isidentifier():
        return None
    value = positional_arg(call, 1) or keyword_arg(call, "tensor") or keyword_arg(call, "param")
    return text, value.value if value is not None else None


def _self_attribute(target: cst.BaseExpression) -> str | None:
    if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
        return target.attr.value
    return None


def _how(value: cst.BaseExpression) -> str:
    if type(value) is not cst.Call:
        return "other"
    if method_name(value) in _MOVES or any(keyword_arg(value, word) is not None for word in _DEVICE_KEYWORDS):
        return "device"
    func = value.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "torch":
        return "host"  # `torch.tensor(0)`, `torch.zeros(n)`: a factory with no device
    return "other"
