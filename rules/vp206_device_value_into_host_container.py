"""VP206 device-value-into-host-container: a device value written into host memory every step.

Two shapes: storing a device tensor into a tensor made on the host (`losses[i] = loss` after
`losses = torch.zeros(n)`), which copies device to host and waits; and building a tensor from
a list of device tensors (`torch.tensor([loss_a, loss_b])`), which reads every element on the
host, one sync each. Storing `loss.item()` is VP201's finding (the read is written out).
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.guards import GuardedRule
from verifier.static.implicit_syncs import DeviceValues
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import positional_arg
from verifier.static.placement import HostDataRule, Origin
from verifier.static.rule import Invalid

_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.Tensor", "torch.FloatTensor", "torch.LongTensor"})
_HOST_MADE = (Origin.FACTORY, Origin.HOST)


class DeviceValueIntoHostContainer(LambdaScopes, GuardedRule, HostDataRule):
    code = "VP206"
    name = "device-value-into-host-container"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None)
    cost = "a device value written into host memory: a copy and a wait"
    summary = (
        "Finds device tensors written into host memory inside the per-step loop: storing into a "
        "tensor created on the host (`losses[i] = loss` after `losses = torch.zeros(n)`) and "
        "`torch.tensor([...])` of device tensors."
    )
    why = (
        "A host tensor cannot hold a device value until the device has computed it: the store "
        "is a device-to-host copy that waits for every queued kernel. `torch.tensor(list)` reads "
        "each device element as a Python number, one synchronisation per element. Both look "
        "like bookkeeping and stall the pipeline every step. Measured on CPU, where nothing waits "
        "(`pytest -m slow tests/benchmarks/test_bench_implicit_syncs.py --benchmark-only`, one "
        "thread): `torch.tensor(list_of_16_scalar_tensors)` median 7.4 us, `torch.stack` of the same "
        "5.1 us; on a GPU each element read by `torch.tensor` is also a device round trip."
    )
    example = """\
losses = torch.zeros(len(loader))
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    losses[i] = loss.detach()
"""
    use_instead = """\
losses = torch.zeros(len(loader), device=device)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    losses[i] = loss.detach()
print(losses.mean().item())
"""
    fix = (
        "Keep the container on the device (`torch.zeros(n, device=device)`) and read it once "
        "per epoch; combine device scalars with `torch.stack([...])`, not `torch.tensor([...])`."
    )
    tokens = ("torch",)
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        "https://pytorch.org/docs/stable/generated/torch.stack.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._values = context.tracker(DeviceValues)
        # Names bound to a list literal or comprehension of device tensors, per function scope.
        self._device_lists: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._device_lists.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._device_lists.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        # Asked before the walk binds the targets: the container's origin as it was.
        for target in node.targets:
            self._check_store(target.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_store(node.target, node.value)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if type(target.target) is cst.Name:
                if self._lists_device_values(node.value):
                    self._device_lists[-1].add(target.target.value)
                else:
                    self._device_lists[-1].discard(target.target.value)

    def _check_store(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if type(target) is not cst.Subscript or not self._active():
            return
        if self.host.origin_of(target.value) not in _HOST_MADE or not self._values.on_device(value):
            return
        container = self.context.code_for(target.value)
        self.report(
            target,
            f"device tensor `{self.context.code_for(value)}` stored into host tensor `{container}` "
            "{loop}: a device-to-host copy that waits for the device {often}",
        )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.imports.call_name(node) not in _FROM_DATA or not self._active():
            return
        first = positional_arg(node, 0)
        if first is None or not self._lists_device_values(first.value, names=True):
            return
        self.report(
            node,
            f"`{self.context.code_for(node.func)}(...)` of device tensors {{loop}} reads every element on "
            "the host, one sync each, {often}",
            fix="Build it on the device with `torch.stack([...])` (or `torch.cat`), and read it once when needed.",
        )

    def _active(self) -> bool:
        return not self.guarded and self.context.may_use_accelerator

    def _lists_device_values(self, node: cst.BaseExpression, names: bool = False) -> bool:
        kind = type(node)
        if kind in (cst.List, cst.Tuple):
            return any(
                type(e) is not cst.StarredElement and self._values.on_device(e.value) for e in node.elements
            )
        if kind in (cst.ListComp, cst.GeneratorExp):
            return self._values.on_device(node.elt)
        return names and kind is cst.Name and node.value in self._device_lists[-1]

    VALID = (
        """\
import torch
device = "cuda"
losses = torch.zeros(1000, device=device)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    losses[i] = loss.detach()
""",
        """\
import torch
device = "cuda"
for x, y in loader:
    out = model(x.to(device))
    loss_a = criterion(out, y.to(device))
    loss_b = out.pow(2).mean()
    total = torch.stack([loss_a, loss_b]).sum()
    total.backward()
    optimizer.step()
""",
        """\
import torch
device = "cuda"
history = torch.zeros(100)
for epoch in range(100):
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    history[epoch] = loss.item()
""",
        """\
import torch
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    weights = torch.tensor([0.5, 0.5], device=device)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = "cuda"
losses = torch.zeros(1000)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    losses[i] = loss.detach()
""",
            line=8,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
device = "cuda"
for x, y in loader:
    out = model(x.to(device))
    loss_a = criterion(out, y.to(device))
    loss_b = out.pow(2).mean()
    (loss_a + loss_b).backward()
    optimizer.step()
    parts = torch.tensor([loss_a.detach(), loss_b.detach()], device=device)
    running += parts
""",
            line=9,
            severity=Severity.MEDIUM,
        ),
    )
