"""VP102 blocking-host-to-device-copy: batch data copied to the device with a blocking call each step.

Only copies whose source is known to be host data are reported: a batch from a data source
(`for x, y in loader`, `next(data_iter)`, `batch["ids"]`) or a tensor built on the host from
host data (`torch.stack` of host slices, `torch.from_numpy`, `.pin_memory()`). Moving a model,
a dtype cast (`.to(torch.float16)`), a move to the CPU, and a tensor of unknown origin (a
function parameter, a model output) are not. A tensor made by a factory and moved (`torch.zeros
(n).to(dev)`) is VP104's finding, not this one. The legacy typed-tensor API copies too: `imgs.type(Tensor)`
where `Tensor` is a CUDA tensor type (`torch.cuda.FloatTensor`, or a name bound to it). A batch handed to a helper as a parameter
(`def train_step(batch): batch.to(dev)`) is reported when a call in the same module passes it
host data, or when every visible caller in the project does (call binding, `bindings.py`: also a
generator over a DataLoader stored by a constructor and read with `next(self.data)`).

`non_blocking=True` does not help a tensor joined on the host (`images = torch.cat([v1, v2])` of a
batch's views, then `images.cuda(non_blocking=True)`): the join writes new, unpinned memory, and a
copy from pageable memory blocks whatever it is told, so it is reported too.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.deferred import deferred
from verifier.static.placement import JOINS, HostDataRule, Origin
from verifier.static.rule import Invalid
from verifier.static.places import Place
from verifier.static.transfers import device_move


_MESSAGE = (
    "blocking copy of {sources} ({origin}) to the device {{often}}: the host waits "
    "for it instead of queuing work; pin the memory and pass `non_blocking=True`"
)
_JOINED = (
    "`non_blocking=True` copy of `{source}`, joined on the host by `{join}` into new, unpinned memory: "
    "from pageable memory the copy blocks anyway {{often}}; join on the device after copying the "
    "pinned parts, or pin the joined tensor"
)


class BlockingHostToDeviceCopy(HostDataRule):
    code = "VP102"
    name = "blocking-host-to-device-copy"
    category = Category.DATA
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "a copy from pageable host memory that blocks the host until the device has it"
    tokens = (".to(", ".cuda(", "Tensor")  # `Tensor`: the legacy `torch.cuda.FloatTensor` types
    summary = (
        "Finds batch data copied to the device with `.to(device)` / `.cuda()` without "
        "`non_blocking=True` inside the per-step loop."
    )
    why = (
        "A copy from pageable host memory is synchronous: the host waits until the bytes arrived "
        "before it queues the forward pass, so the copy never overlaps with the GPU's work on the "
        "previous step. From pinned memory with `non_blocking=True` the copy is queued like a "
        "kernel and the host moves on. Once per epoch it does not matter; once per step it does."
    )
    example = """\
loader = DataLoader(dataset, batch_size=64, num_workers=4)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
"""
    use_instead = """\
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = criterion(model(x), y)
"""
    fix = (
        "Pin the host memory (`DataLoader(..., pin_memory=True)` or `.pin_memory()`) and copy with "
        "`.to(device, non_blocking=True)`."
    )
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers",
        "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Names bound to host data joined on the host (`images = torch.cat([v1, v2])`), per function.
        self._joined: list[dict[str, str]] = [{}]
        # Parameters that receive host data at some call site in the module: (function, position or name).
        self._host_arguments: set[tuple[str, int | str]] = set()
        self._parameters: dict[str, list[str]] = {}
        self._statement_copies: list[tuple[cst.Call, str, Origin]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._parameters[node.name.value] = [p.name.value for p in node.params.params]
        self._joined.append({})

    def visit_Lambda(self, node: cst.Lambda) -> None:
        name = self.context.heat.lambda_name(node)  # `move = lambda batch: batch.to(device)`
        if name is not None:
            self._parameters[name] = [p.name.value for p in node.params.params]

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._joined.pop()

    def leave_Assign(self, node: cst.Assign) -> None:
        # After the value's calls were visited: `images = images.cuda(non_blocking=True)` reads
        # the join before the name is rebound.
        joined = self._joined[-1]
        join = self._host_join(node.value)
        for target in node.targets:
            if type(target.target) is cst.Name:
                if join is None:
                    joined.pop(target.target.value, None)
                else:
                    joined[target.target.value] = join

    def _host_join(self, value: cst.BaseExpression) -> str | None:
        """`torch.cat([images[0], images[1]])` of host data: the join's name, else None. The result
        is new memory, unpinned whatever its parts were (a pinned batch's crops included)."""
        if type(value) is not cst.Call:
            return None
        qualified = self.context.imports.call_name(value) or ""
        if qualified not in JOINS or self.host.origin_of(value) not in (Origin.BATCH, Origin.HOST):
            return None
        return qualified.removeprefix("torch.")

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement_copies = []

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        copies, self._statement_copies = self._statement_copies, []
        if copies:
            first, _, origin = copies[0]
            sources = " and ".join(f"`{source}`" for _, source, _ in copies)
            self.report(first, _MESSAGE.format(sources=sources, origin=origin.value))

    def visit_Call(self, node: cst.Call) -> None:
        self._note_host_arguments(node)
        move = device_move(node, self.context.imports, self.context.facts)
        if move is None:
            return
        if not move.blocks:
            self._copy_from_a_join(node, move.source)
            return
        placed = self.context.places.placement_of(move.source)
        if placed is not None and placed.place is Place.DEVICE:
            return  # already on the device (`accelerator.prepare`d loaders yield device batches): a no-op
        origin = self.host.origin_of(move.source)
        source = self.context.code_for(move.source)
        if origin in (Origin.BATCH, Origin.HOST):
            # `x, y = x.to(dev), y.to(dev)`: one statement, one finding naming both copies.
            self._statement_copies.append((node, source, origin))
            return
        function = self.context.heat.where().function
        if origin is None and type(move.source) is cst.Name and function is not None:
            # `def train_batch(src): src.to(dev)`: decided once every call site has been seen.
            # The function's own name (a lambda's is the name it is bound to: `send = lambda x: ...`).
            name, parameter = function.key.rsplit(".", 1)[-1], move.source.value
            if parameter in function.params:
                self.report(
                    node,
                    _MESSAGE.format(sources=f"`{source}`", origin="a batch passed in from a data-source loop"),
                    severity=deferred(
                        lambda: self.severity if self._receives_host_data(name, parameter) else None,
                        outcomes=(self.severity,),
                    ),
                )

    def _copy_from_a_join(self, node: cst.Call, source: cst.BaseExpression) -> None:
        """A non-blocking copy of a tensor joined on the host: pageable memory, so it blocks."""
        join = self._host_join(source)
        if join is None and type(source) is cst.Name:
            join = self._joined[-1].get(source.value)
        if join is not None:
            self.report(node, _JOINED.format(source=self.context.code_for(source), join=f"torch.{join}"))

    def _note_host_arguments(self, call: cst.Call) -> None:
        if type(call.func) is not cst.Name:
            return
        for index, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
            if self.host.origin_of(arg.value) in (Origin.BATCH, Origin.HOST):
                self._host_arguments.add((call.func.value, index))
        for arg in call.args:
            if arg.keyword is not None and self.host.origin_of(arg.value) in (Origin.BATCH, Origin.HOST):
                self._host_arguments.add((call.func.value, arg.keyword.value))

    def _receives_host_data(self, function: str, parameter: str) -> bool:
        order = self._parameters.get(function, [])
        position = order.index(parameter) if parameter in order else None
        return (function, parameter) in self._host_arguments or (function, position) in self._host_arguments

    VALID = (
        """\
import torch
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = criterion(model(x), y)
    loss.backward()
""",
        """\
import torch
model = model.to(device)
for x, y in loader:
    x = x.to(torch.float16)
    y = y.to("cpu")
    model.to(device)
    loss = criterion(model(x), y)
    loss.backward()
""",
        """\
import torch
def refine(hidden):
    hidden = hidden.to(device)
    return head(hidden)

for batch in loader:
    refine(model(batch.to(device, non_blocking=True))).sum().backward()
""",
        """\
import torch
for x, y in loader:
    noise = torch.randn(8).to(device)
    loss = criterion(model(x + noise), y)
    loss.backward()
""",
        """\
import torch
for views, labels in loader:
    images = torch.cat([views[0], views[1]], dim=0).pin_memory()
    images = images.cuda(non_blocking=True)
    pair = torch.cat([views[0].cuda(non_blocking=True), views[1].cuda(non_blocking=True)])
    loss = model(images).sum() + model(pair).sum()
    loss.backward()
""",
    )
    INVALID = (
        Invalid(
            # The copy inside a lambda mapped over the batch's parts.
            """\
import torch
for text, images in loader:
    text, images = map(lambda t: t.cuda(), (text, images))
    loss = model(text, images).sum()
    loss.backward()
    optimizer.step()
""",
            line=3,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
def train_step(batch):
    batch = batch.to(device)
    model(batch).sum().backward()

for batch in loader:
    train_step(batch)
""",
            line=3,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for images, labels in train_loader:
    images = images.cuda(non_blocking=True)
    labels = labels.cuda()
    loss = criterion(model(images), labels)
    loss.backward()
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
data = torch.tensor(tokens, dtype=torch.long)

def get_batch(ix):
    x = torch.stack([data[i : i + 64] for i in ix])
    return x.to(device)

for step in range(max_steps):
    x = get_batch(torch.randint(100, (8,)))
    model(x).sum().backward()
""",
            line=6,
            severity=Severity.LOW,
        ),
        Invalid(
            # Two pinned crops joined on the host: the joined tensor is pageable, so the copy blocks.
            """\
import torch
for views, labels in loader:
    images = torch.cat([views[0], views[1]], dim=0)
    images = images.cuda(non_blocking=True)
    loss = model(images).sum()
    loss.backward()
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
for batch in dataloader:
    batch = {k: v.to(device) for k, v in batch.items()}
    outputs = model(**batch)
    outputs.loss.backward()
""",
            line=2,
            severity=Severity.LOW,
        ),
    )
