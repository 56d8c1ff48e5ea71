"""VP104 host-tensor-moved-each-step: a tensor made on the host by a factory, then copied to the device.

Covers `torch.zeros/ones/empty/full/tensor/arange/rand*/...(...)` without `device=` (or with
`device="cpu"`) that is moved either in the same expression (`torch.zeros(n).to(dev)`, also
through casts and reshapes) or through a name (`mask = torch.ones(n)` ... `mask.cuda()`), in
the same function or from module level; and such a tensor (or NumPy's random or range values)
used as an index into a tensor shown on the device (`x[torch.randperm(n)]`, also a view of one:
`q[torch.arange(B)[:, None], top]`), which copies it there. `*_like` factories follow their input's device and are
not included; nor are tensors whose origin is unknown (parameters, results of other calls).
`torch.tensor(data)` counts only for literals, Python numbers and NumPy values computed in the
code (also a parameter that every visible caller passes a Python number): data of unknown origin
(an environment's output) arrives on the host and must be copied. `torch.from_numpy` of values
NumPy generated in the code (`np.random.choice`, `np.arange`, also cast or copied: `np.eye(3).astype(np.float32)`) counts like a torch factory. A CUDA tensor type of the legacy API called on such values
(`Tensor(np.random.normal(...))` with `Tensor = torch.cuda.FloatTensor`) copies them the same way.

Fix (unsafe): `torch.zeros(...).to(dev)` and `torch.zeros(...).cuda()`, the factory call moved at once
by a plain `.to(<device>)` / `.to(device=<device>)` / `.cuda()`, become `torch.zeros(..., device=dev)`
(`device="cuda"`). Random factories then draw from the device's generator, not the CPU's, and a
tensor created with `requires_grad` would be a leaf on the device: behaviour may change, so it is
applied only with `--unsafe-fixes`. Not offered where the factory already names a device, a
generator, an `out` or pinned memory, or hides arguments in `*args`/`**kwargs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.autofix import Fix
from verifier.static.call_edits import append_argument, holds_comment, keyword_argument
from verifier.static.guards import GuardedRule
from verifier.static.heat import Condition, Where
from verifier.static.implicit_syncs import DeviceValues
from verifier.static.names import has_star_args, keyword_arg, method_name
from verifier.static.placement import HostDataRule, Origin
from verifier.static.rule import Invalid
from verifier.static.transfers import DeviceMove, device_move


class HostTensorMovedEachStep(GuardedRule, HostDataRule):
    code = "VP104"
    name = "host-tensor-moved-each-step"
    category = Category.GPU
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=None)
    cost = "an allocation on the host and a copy to the device, where the device could create the tensor itself"
    # `Tensor`: the legacy `torch.cuda.FloatTensor` types; the random and range factories make
    # the index tensors that index a device tensor from the host.
    tokens = (".to(", ".cuda(", "Tensor", "randperm", "randint", "arange", "random.")
    summary = (
        "Finds tensors created on the host by a torch factory (`torch.zeros`, `torch.arange`, "
        "`torch.tensor`, ...) without `device=` and then copied to the device in a loop."
    )
    why = (
        "The factory allocates and fills host memory, then `.to(device)` allocates again on the "
        "device and copies from pageable memory, which blocks the host. Done every step, that is "
        "an allocation, a fill and a synchronous copy per step for a tensor the device could have "
        "created itself (`device=`), or that could have been created once outside the loop."
    )
    example = """\
for x, y in loader:
    x = x.to(device, non_blocking=True)
    mask = torch.ones(x.shape[0], x.shape[1]).to(device)
    loss = criterion(model(x, mask), y.to(device, non_blocking=True))
"""
    use_instead = """\
for x, y in loader:
    x = x.to(device, non_blocking=True)
    mask = torch.ones(x.shape[0], x.shape[1], device=device)
    loss = criterion(model(x, mask), y.to(device, non_blocking=True))
"""
    fix = (
        "Create the tensor where it is used: pass `device=` to the factory, or create it once "
        "outside the loop (a reusable buffer) instead of copying it every step."
    )
    autofix = (
        "`torch.zeros(...).to(dev)` / `.cuda()` becomes `torch.zeros(..., device=dev)` / `device=\"cuda\"`; "
        "random factories then draw from the device's generator"
    )
    autofix_safe = False
    references = (
        "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device",
        "https://pytorch.org/docs/stable/tensor_attributes.html#torch-device",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._values = context.tracker(DeviceValues)
        # In the simple statement being walked: per host-made index (by its code), where it was
        # first met and the device tensors it indexes (`data[mask], labels[mask]`: one fix, one
        # finding); None outside simple statements (a test, a loop header: reported at once).
        self._indexing: dict[str, _Indexing] | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._indexing = {}

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for index, found in (self._indexing or {}).items():
            self._report_indexing(found.node, index, found.indexed, found.where, found.condition)
        self._indexing = None

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`x[perm]` with `perm = torch.randperm(n)` and `x` on the device: indexing copies the
        host-made index to the device first (a blocking copy), every time."""
        if self.guarded or not self.context.may_use_accelerator:
            return
        indexes = [element.slice.value for element in node.slice if type(element.slice) is cst.Index]
        made_here = [index for index in indexes if self.host.origin_of(index) is Origin.FACTORY]
        if not made_here or not self._values.on_device(node.value):
            return
        index, indexed = self.context.code_for(made_here[0]), self.context.code_for(node.value)
        where, condition = self.context.heat.where(), self.context.condition_probe()
        if self._indexing is None:
            self._report_indexing(made_here[0], index, [indexed], where, condition)
        elif index in self._indexing:
            self._indexing[index].indexed.append(indexed)
        else:
            self._indexing[index] = _Indexing(made_here[0], [indexed], where, condition)

    def _report_indexing(
        self, node: cst.BaseExpression, index: str, indexed: list[str], where: Where, condition: Condition | None
    ) -> None:
        named = " and ".join(f"`{name}`" for name in dict.fromkeys(indexed))
        self.report(
            node,
            f"`{index}` is created on the host and copied to the device to index {named} here: "
            "create it with `device=` (or once, outside the loop)",
            where=where, condition=condition,
        )

    def visit_Call(self, node: cst.Call) -> None:
        move = device_move(node, self.context.imports, self.context.facts)
        if move is None or self.host.origin_of(move.source) is not Origin.FACTORY:
            return
        if self.guarded:
            return  # every N steps, or a device copy cached on first use
        source = self.context.code_for(move.source)
        self.report(
            node,
            f"`{source}` is created on the host and copied to the device here: create it with "
            "`device=` (or once, outside the loop)",
            autofix=self._created_on_device(move),
        )

    def _created_on_device(self, move: DeviceMove) -> Fix | None:
        """The factory call with the move's device as `device=`, when the move is a plain one
        applied to the factory call itself."""
        factory, call = move.source, move.call
        if type(factory) is not cst.Call or self.context.imports.call_name(factory) not in _DEVICE_FACTORIES:
            return None
        if factory.lpar or has_star_args(factory) or any(keyword_arg(factory, k) for k in _CONFLICTING_KEYWORDS):
            return None
        device = _plain_destination(call)
        if device is None or holds_comment(call.func.dot, *call.args, call.whitespace_before_args):
            return None
        placed = append_argument(factory, keyword_argument("device", device))
        return self.offer_fix(call, placed.with_changes(lpar=call.lpar, rpar=call.rpar), "Create it with `device=`")

    VALID = (
        # A NumPy random number (no `size`) is one index, not an array copied to the device.
        """\
import numpy as np
import torch
images = torch.randn(100, 3, 8, 8).cuda()
for step in range(1000):
    target = images[np.random.choice(100)]
    loss = model(target).sum()
    loss.backward()
""",
        # The index made where it is used, and a host index into a host tensor.
        """\
import torch
for x, y in loader:
    perm = torch.randperm(x.size(0))
    x = x[perm].cuda(non_blocking=True)
    order = torch.randperm(x.size(0), device=x.device)
    loss = model(x[order]).sum()
    loss.backward()
""",
        """\
import torch
weights = torch.tensor([0.2, 0.8])
weights_on_device = None
for x, y in loader:
    if weights_on_device is None:
        weights_on_device = weights.to(device)
    loss = criterion(model(x), y) * weights_on_device
    loss.backward()
""",
        """\
import torch
for step in range(num_steps):
    obs, reward, terminated, truncated, info = envs.step(action)
    rewards[step] = torch.tensor(reward).to(device).view(-1)
""",
        """\
import torch
for x, y in loader:
    mask = torch.ones(x.shape[0], device=x.device)
    noise = torch.randn_like(x)
    loss = criterion(model(x, mask + noise), y)
    loss.backward()
""",
        """\
import torch
weights = torch.tensor([0.2, 0.8]).to(device)
for x, y in loader:
    loss = criterion(model(x), y) * weights
    loss.backward()
""",
        """\
import torch
for x, y in loader:
    ids = torch.arange(x.shape[1]).to(torch.float16)
    scale = torch.full((1,), 2.0, **factory_kwargs).to(device)
    loss = criterion(model(x) * scale, y)
    loss.backward()
""",
    )
    INVALID = (
        Invalid(
            # A host-made index into a device tensor: the index is copied to the device first.
            """\
import torch
for x, y in loader:
    x = x.cuda(non_blocking=True)
    perm = torch.randperm(x.size(0))
    loss = model(x[perm]).sum()
    loss.backward()
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            # A NumPy value made here, cast (`astype`) and wrapped, moved every step.
            """\
import numpy as np
import torch
for x, y in loader:
    iden = torch.from_numpy(np.eye(3).flatten().astype(np.float32)).view(1, 9)
    loss = model(x.cuda(), iden.cuda()).sum()
    loss.backward()
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
for x, y in loader:
    mask = torch.ones(x.shape[0], x.shape[1]).to(device)
    loss = criterion(model(x, mask), y)
    loss.backward()
""",
            line=3,
            severity=Severity.MEDIUM,
            fixed="""\
import torch
for x, y in loader:
    mask = torch.ones(x.shape[0], x.shape[1], device=device)
    loss = criterion(model(x, mask), y)
    loss.backward()
""",
        ),
        Invalid(
            """\
import torch as t

def train_step(model, x):
    positions = t.arange(x.shape[1])
    positions = positions.unsqueeze(0).cuda()
    model(x, positions).sum().backward()

for x in batches:
    train_step(model, x)
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
for epoch in range(10):
    class_weights = torch.tensor([1.0, 4.0, 2.5], dtype=torch.float32).to(device)
    for x, y in loader:
        loss = criterion(model(x), y) * class_weights
        loss.backward()
""",
            line=3,
            severity=Severity.LOW,
            fixed="""\
import torch
for epoch in range(10):
    class_weights = torch.tensor([1.0, 4.0, 2.5], dtype=torch.float32, device=device)
    for x, y in loader:
        loss = criterion(model(x), y) * class_weights
        loss.backward()
""",
        ),
        Invalid(
            """\
import torch
for x, y in loader:
    noise = torch.randn(
        x.shape[0],
        latent_dim,
    ).cuda()
    loss = criterion(model(x, noise), y)
    loss.backward()
""",
            line=3,
            severity=Severity.MEDIUM,
            fixed="""\
import torch
for x, y in loader:
    noise = torch.randn(
        x.shape[0],
        latent_dim,
        device="cuda",
    )
    loss = criterion(model(x, noise), y)
    loss.backward()
""",
        ),
    )


# Torch factories that take `device=` and make the same values there (random ones from that
# device's generator); the legacy tensor types and `torch.normal`/`torch.bernoulli` do not all take it.
_DEVICE_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "tensor", "arange", "range", "linspace", "logspace", "eye",
        "rand", "randn", "randint", "randperm", "empty_strided",
    )
)
# A factory with one of these cannot simply take a device: it names one already, draws from a CPU
# generator, writes into a given tensor, pins host memory, or makes a leaf that the move made a copy of.
_CONFLICTING_KEYWORDS = ("device", "generator", "out", "pin_memory", "requires_grad")


@dataclass
class _Indexing:
    """A host-made index met in a statement: its first use, what it indexes, where it runs."""

    node: cst.BaseExpression
    indexed: list[str]
    where: Where
    condition: Condition | None


def _plain_destination(move: cst.Call) -> cst.BaseExpression | None:
    """The device of `.to(dev)`, `.to(device=dev)` or `.cuda()` (`"cuda"`): no dtype, no copy flags."""
    method = method_name(move)
    if method == "cuda":
        return cst.SimpleString('"cuda"') if not move.args else None
    if method != "to" or len(move.args) != 1:
        return None
    only = move.args[0]
    if only.star or (only.keyword is not None and only.keyword.value != "device"):
        return None
    return only.value
