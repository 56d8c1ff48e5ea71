"""VP407 model-device-round-trip: the whole model moved to the host and back to the device every step.

Reported at the move to the host (`model.cpu()`, `model.to("cpu")`) when the same loop body
(or the same function, for code outside loops) also moves that model back to an accelerator:
`model.cuda()`, `model.to(device)`, or `model = <anything>.cuda()` (a model fetched on the host
and moved in). A model is a module by evidence: a model-like name (`model`, `net`, `encoder`), a
name bound to a `torch.nn` module, a name that is also called (`self.text_encoder(ids)`: a
tensor is not callable), or `.parameters()` / `.state_dict()` read on the moved value
(`m.cpu().parameters()`). Moves under a rate-limit guard (`if step % save_every == 0:`) are
periodic and not reported; a move in one direction only is a no-op after the first step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.guards import GuardedRule
from verifier.static.heat import Where
from verifier.static.names import dotted_name, keyword_arg, method_name, positional_arg, receiver
from verifier.static.rule import Invalid
from verifier.static.devices import destination
from verifier.static.transfers import is_module

_MODULE_READS = frozenset({"parameters", "named_parameters", "state_dict", "buffers", "modules", "children"})


@dataclass(eq=False)
class _HostMove:
    name: str
    call: cst.Call
    where: Where


@dataclass(eq=False)
class _Scope:
    """A function body or a loop body: the moves seen in it, in both directions."""

    to_host: list[_HostMove] = field(default_factory=list)
    to_device: set[str] = field(default_factory=set)


class ModelDeviceRoundTrip(GuardedRule):
    code = "VP407"
    name = "model-device-round-trip"
    category = Category.GPU
    severity = SeverityByHeat(step=Severity.HIGH, epoch=None, once=None)
    cost = "the model's parameters copied between devices"
    # `m.cpu()` of a whole model is also a device-to-host copy (VP201); the round trip is the cause.
    supersedes = ("VP201",)
    tokens = ("cpu",)
    summary = (
        "Finds a whole model moved to the host (`model.cpu()`) and back to the device "
        "(`model.cuda()` / `model.to(device)`) inside the training step."
    )
    why = (
        "Moving a module copies every parameter and buffer (and their gradients) across the bus, "
        "one blocking copy per tensor, in each direction, and frees and reallocates all of the "
        "model's device memory. For a ResNet-50 that is about 100 MB each way per step, which can "
        "take longer than the step itself; the optimizer state is left behind or moved as well. "
        "Keep the model on the device and move only what must cross: the gradients or the "
        "parameters you send (`[p.grad.cpu() for p in model.parameters()]`, ideally into pinned "
        "buffers with `non_blocking=True`), or load new weights in place with "
        "`model.load_state_dict(...)`."
    )
    example = """\
for inputs, labels in loader:
    loss_fn(model(inputs), labels).backward()
    grads = [p.grad for p in model.cpu().parameters()]
    model = server.exchange(grads).cuda()
"""
    use_instead = """\
for inputs, labels in loader:
    loss_fn(model(inputs), labels).backward()
    grads = [p.grad.to("cpu", non_blocking=True) for p in model.parameters()]
    torch.cuda.current_stream().synchronize()
    model.load_state_dict(server.exchange(grads))
"""
    fix = (
        "Keep the model on the device; copy only the tensors that must reach the host, and load "
        "returned weights in place (`load_state_dict` or `p.copy_(...)`)."
    )
    references = (
        "https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to",
        "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per function (the module first): the function's own scope, then one per open loop.
        self._scopes: list[list[_Scope]] = [[_Scope()]]
        # Values that had `.parameters()` or `.state_dict()` read on them: modules by evidence.
        self._module_reads: set[int] = set()
        # Names called like functions (`self.encoder(x)`): moved with `.to()` as well, a module.
        self._called: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append([_Scope()])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._close(self._scopes.pop()[0])

    def visit_For(self, node: cst.For) -> None:
        self._scopes[-1].append(_Scope())

    def leave_For(self, node: cst.For) -> None:
        self._close(self._scopes[-1].pop())

    def visit_While(self, node: cst.While) -> None:
        self._scopes[-1].append(_Scope())

    def leave_While(self, node: cst.While) -> None:
        self._close(self._scopes[-1].pop())

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) in (cst.Name, cst.Attribute):
            called = dotted_name(node.func)
            if called is not None:
                self._called.add(called)
        if method_name(node) in _MODULE_READS:
            owner = receiver(node)
            if type(owner) is cst.Call:
                self._module_reads.add(id(owner))
            return
        direction = _direction(node, self.context.imports)
        owner = receiver(node)
        name = dotted_name(owner) if owner is not None and direction is not None else None
        if name is None or self.guarded:
            return
        if direction == "host":
            # Paired only with moves back in the same loop body (or the function, outside loops).
            self._scopes[-1][-1].to_host.append(_HostMove(name, node, self.context.heat.here()))
        else:
            self._moved_to_device(name)

    def leave_Assign(self, node: cst.Assign) -> None:
        # `model = fetch_weights().cuda()`: a model brought back onto the device under its name.
        value = node.value
        if type(value) is not cst.Call or _direction(value, self.context.imports) != "device" or self.guarded:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self._moved_to_device(name)

    def _moved_to_device(self, name: str) -> None:
        for scope in self._scopes[-1]:
            scope.to_device.add(name)

    def _close(self, scope: _Scope) -> None:
        for move in scope.to_host:
            if move.name not in scope.to_device:
                continue
            owner = receiver(move.call)
            if not (
                is_module(owner, self.context.facts) or id(move.call) in self._module_reads or move.name in self._called
            ):
                continue
            self.report(
                move.call,
                f"`{move.name}` is moved to the host and back to the device {{often}}: every parameter "
                "and buffer crosses the bus twice and the model's device memory is freed and "
                "reallocated; keep it on the device and copy only what must reach the host",
                where=move.where,
            )

    VALID = (
        """\
import torch
model = model.cuda()
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
model.cpu()
torch.save(model.state_dict(), "final.pt")
""",
        """\
import torch
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 1000 == 0:
        model.cpu()
        torch.save(model.state_dict(), "ckpt.pt")
        model.cuda()
""",
        """\
import torch
for x, y in loader:
    x = x.cpu()
    loss = criterion(model(x.cuda()), y)
    loss.backward()
    optimizer.step()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for inputs, labels in loader:
    loss_fn(m(inputs), labels).backward()
    grads = [p.grad for p in m.cpu().parameters()]
    m = server.exchange(grads).cuda()
""",
            line=4,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
import torch
for batch in train_loader:
    teacher_model.to("cpu")
    loss = student(batch.to(device, non_blocking=True)).sum()
    loss.backward()
    optimizer.step()
    teacher_model.to(device)
""",
            line=3,
            severity=Severity.HIGH,
        ),
    )


def _direction(call: cst.Call, imports) -> str | None:
    """"host" for `.cpu()` / `.to("cpu")`, "device" for `.cuda()` / `.to(<accelerator>)`, else None."""
    method = method_name(call)
    if method == "cpu" and not call.args:
        return "host"
    if method == "cuda":
        return "device"
    if method != "to":
        return None
    device = keyword_arg(call, "device") or positional_arg(call, 0)
    if device is None:
        return None
    where = destination(device.value, imports)
    if where is True:
        return "device"
    if where is False and _names_the_host(device.value):
        return "host"
    return None


def _names_the_host(node: cst.BaseExpression) -> bool:
    """`"cpu"`, `torch.device("cpu")`, `cpu_device`: not a dtype (which `destination` also calls False)."""
    if type(node) is cst.SimpleString:
        return "cpu" in node.value
    if type(node) is cst.Call:
        return any(_names_the_host(arg.value) for arg in node.args[:1])
    return "cpu" in (dotted_name(node) or "").lower()
