"""VP106 blocking-copy-in-batch-producer: a generator or collate function copies batches to the device with a blocking call.

A generator's body runs each time its consumer asks for the next item, not where the generator
is created, so the heat model's call edges (which make `get_batch()` as hot as its per-step call
site) cannot see how often it runs. This rule follows the generator object instead: a function
that `yield`s, consumed by `next(gen)` or `for batch in gen` (directly, through a name bound to
the call, or through another generator that iterates it), runs its body as often as that
consumer. A `collate_fn=` given to a DataLoader runs once per batch of every loop over that
loader. The finding is placed on the copy in the producer; its heat is the consumer's.

The split with VP102 (blocking-host-to-device-copy): VP102 reports copies whose own line is hot,
including plain batch functions (`def get_batch(): ...; return x.to(device)`) called from the step
loop, and copies at the consumer (`x, y = next(it); x.to(device)`). VP106 reports only copies
inside producers whose own heat is not per step; one copy gives one finding. As in VP102 the
source must be known host data (a batch from a loader, a tensor built on the host from data);
a factory tensor (`torch.zeros(n).cuda()`) is VP104's. In a collate function every value comes
from the dataset's samples, so any blocking copy there counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Heat, Severity, SeverityByHeat
from verifier.static.dataloader import DATALOADERS
from verifier.static.deferred import deferred
from verifier.static.heat import Where, heat_of
from verifier.static.names import dotted_name, keyword_arg, local_callee_name, positional_arg
from verifier.static.placement import HostDataRule, Origin
from verifier.static.rule import Invalid
from verifier.static.transfers import device_move

_MESSAGE = (
    "blocking copy of {sources} ({origin}) to the device inside the batch producer `{producer}`, "
    "which runs {{often}} (each time its consumer takes a batch): the host waits for the copy "
    "instead of queuing work; pin the memory and pass `non_blocking=True`, or copy in the loop"
)
_COLLATE_ORIGIN = "samples collated on the host"


@dataclass(eq=False)
class _Copy:
    call: cst.Call
    sources: list[str]
    origin: str
    where: Where


@dataclass(eq=False)
class _Producer:
    name: str
    generator: bool = False
    copies: list[_Copy] = field(default_factory=list)


@dataclass(eq=False)
class _Consumer:
    """Something iterated at `where`: a producer call (`callee`) or a name bound to one."""

    where: Where
    callee: str | None = None
    name: str | None = None
    # The generator function the consumer sits in: its own consumers decide how often it runs.
    inside: str | None = None


class BlockingCopyInBatchProducer(HostDataRule):
    code = "VP106"
    name = "blocking-copy-in-batch-producer"
    category = Category.DATA
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "a blocking copy inside the batch producer, on the training thread's path"
    tokens = ("yield", "collate_fn")
    summary = (
        "Finds `.to(device)` / `.cuda()` without `non_blocking=True` inside a batch generator or a "
        "collate function that the step loop draws from."
    )
    why = (
        "A copy from pageable host memory is synchronous: the host waits until the bytes arrived. "
        "Hidden in a generator that yields device batches, the wait happens every time the "
        "training loop takes the next batch, before it can queue the step's kernels, so the copy "
        "never overlaps with the GPU's work. A collate function that moves tensors to the device "
        "also forces the copy into the loader's process (and CUDA into its workers). Pinned "
        "memory with `non_blocking=True`, or the copy moved into the step loop after a pinned "
        "DataLoader, lets the copy run while the GPU computes. Scope: plain batch functions called "
        "every step (`get_batch()`, `loader.next_batch()`) and copies at the consumer are VP102's "
        "findings; VP106 covers only the producer side VP102 cannot see, generator bodies and "
        "collate functions, whose heat is their consumer's. One copy gives one finding."
    )
    example = """\
def batches(loader):
    while True:
        for x, y in loader:
            yield x.to(device), y.to(device)

data = batches(train_loader)
for step in range(max_steps):
    x, y = next(data)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""
    use_instead = """\
def batches(loader):
    while True:
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)

data = batches(DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True))
for step in range(max_steps):
    x, y = next(data)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""
    fix = (
        "Pin the host memory (`DataLoader(..., pin_memory=True)` or `.pin_memory()`) and copy with "
        "`.to(device, non_blocking=True)`; in a collate function, return host tensors and copy in the loop."
    )
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers",
        "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
        "https://pytorch.org/docs/stable/data.html#memory-pinning",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._open: list[_Producer] = []
        self._producers: dict[str, list[_Producer]] = {}
        self._consumers: list[_Consumer] = []
        # `data = batches(loader)` / `self.data = load(...)`: name -> the function called.
        self._bound_to_call: dict[str, set[str]] = {}
        # `loader = DataLoader(ds, collate_fn=pad_batch)`: loader name -> collate function names.
        self._collating_loaders: dict[str, set[str]] = {}
        self._collate_functions: set[str] = set()
        self._statement: list[_Copy] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        producer = _Producer(node.name.value)
        self._open.append(producer)
        self._producers.setdefault(producer.name, []).append(producer)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._open.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._open.append(_Producer("<lambda>"))

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._open.pop()

    def visit_Yield(self, node: cst.Yield) -> None:
        if self._open:
            self._open[-1].generator = True
            if type(node.value) is cst.From:
                self._note_iterated(node.value.item, self.context.heat.here())

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = []

    def visit_Call(self, node: cst.Call) -> None:
        if dotted_name(node.func) == "next" and node.args:
            self._note_iterated(node.args[0].value, self.context.heat.here())
        if not self._open:
            return
        move = device_move(node, self.context.imports, self.context.facts)
        if move is None or not move.blocks:
            return
        origin = self.host.origin_of(move.source)
        if origin is Origin.FACTORY:
            return
        known = origin.value if origin in (Origin.BATCH, Origin.HOST) else ""
        source = f"`{self.context.code_for(move.source)}`"
        last = self._statement[-1] if self._statement else None
        if last is not None and last.where.function is self.context.heat.where().function and bool(last.origin) == bool(known):
            # `x, y = x.to(dev), y.to(dev)`: one statement, one finding naming both copies.
            last.sources.append(source)
            return
        copy = _Copy(node, [source], known, self.context.heat.here())
        self._statement.append(copy)
        self._open[-1].copies.append(copy)

    def visit_For(self, node: cst.For) -> None:
        self._note_iterated(node.iter, self.context.heat.loop_where(node))

    def leave_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if type(value) is not cst.Call:
            return
        targets = [name for name in (dotted_name(t.target) for t in node.targets) if name is not None]
        if self.context.imports.call_name(value) in DATALOADERS:
            collate = _collate_function(value)
            if collate is not None:
                self._collate_functions.add(collate)
                for target in targets:
                    self._collating_loaders.setdefault(target.rsplit(".", 1)[-1], set()).add(collate)
            return
        callee = local_callee_name(value.func)
        if callee is not None:
            for target in targets:
                self._bound_to_call.setdefault(target, set()).add(callee)

    def _note_iterated(self, node: cst.BaseExpression, where: Where) -> None:
        while type(node) is cst.Call and dotted_name(node.func) in ("iter", "enumerate") and node.args:
            node = node.args[0].value
        inside = self._open[-1].name if self._open else None
        if type(node) is cst.Call:
            callee = local_callee_name(node.func)
            if callee is not None:
                self._consumers.append(_Consumer(where, callee=callee, inside=inside))
        elif type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            if name is not None:
                self._consumers.append(_Consumer(where, name=name, inside=inside))

    def leave_Module(self, node: cst.Module) -> None:
        for name, producers in self._producers.items():
            for producer in producers:
                collate = name in self._collate_functions
                if not (producer.generator or collate):
                    continue
                copies = [c for c in producer.copies if c.origin or collate]
                if not copies:
                    continue
                for where in self._consumer_wheres(name, collate, set()):
                    for copy in copies:
                        self._report(copy, producer.name, where)

    def _consumer_wheres(self, producer: str, collate: bool, seen: set[str]) -> list[Where]:
        """Where the producer's body is asked for its next item, through generators that iterate it."""
        if producer in seen:
            return []
        seen.add(producer)
        found: list[Where] = []
        for consumer in self._consumers:
            if collate:
                draws = consumer.name is not None and (
                    producer in self._collating_loaders.get(consumer.name.rsplit(".", 1)[-1], ())
                )
            else:
                draws = consumer.callee == producer or (
                    consumer.name is not None and producer in self._bound_to_call.get(consumer.name, ())
                )
            if not draws:
                continue
            outer = consumer.inside
            if outer is not None and outer != producer and any(p.generator for p in self._producers.get(outer, ())):
                found.extend(self._consumer_wheres(outer, False, seen))
            else:
                found.append(consumer.where)
        return found

    def _report(self, copy: _Copy, producer: str, consumer: Where) -> None:
        own = copy.where

        def decide() -> SeverityByHeat | None:
            # Where the copy's own line is hot, VP102 reports it: one copy, one finding.
            return None if heat_of(own) in (Heat.STEP, Heat.EVAL) else self.severity

        self.report(
            copy.call,
            _MESSAGE.format(
                sources=" and ".join(copy.sources), origin=copy.origin or _COLLATE_ORIGIN, producer=producer
            ),
            where=consumer,
            severity=deferred(decide, outcomes=(self.severity,)),
        )

    VALID = (
        """\
import torch
def batches(loader):
    for x, y in loader:
        yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)

for x, y in batches(train_loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
        """\
import torch
def synthetic():
    while True:
        yield torch.randn(8, 3, 32, 32).cuda()

stream = synthetic()
for step in range(100):
    loss = model(next(stream)).sum()
    loss.backward()
    optimizer.step()
""",
        """\
import torch
def batches(loader):
    for x, y in loader:
        yield x.to(device), y.to(device)

preview = next(batches(train_loader))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
def infinite(loader):
    while True:
        for images, labels in loader:
            yield images.to(device), labels.to(device)

data = infinite(train_loader)
for step in range(max_steps):
    images, labels = next(data)
    loss = criterion(model(images), labels)
    loss.backward()
    optimizer.step()
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
from torch.utils.data import DataLoader

def pad_batch(samples):
    tokens = torch.nn.utils.rnn.pad_sequence([s["ids"] for s in samples], batch_first=True)
    return tokens.cuda()

train_loader = DataLoader(corpus, batch_size=32, collate_fn=pad_batch)
for epoch in range(3):
    for tokens in train_loader:
        model(tokens).sum().backward()
        optimizer.step()
""",
            line=6,
            severity=Severity.LOW,
        ),
    )


def _collate_function(call: cst.Call) -> str | None:
    """`collate_fn=pad` or `collate_fn=partial(pad, ...)`: the module function that collates."""
    argument = keyword_arg(call, "collate_fn") or positional_arg(call, 6)
    if argument is None:
        return None
    value = argument.value
    if type(value) is cst.Call and (dotted_name(value.func) or "").endswith("partial") and value.args:
        value = value.args[0].value
    return local_callee_name(value) if type(value) in (cst.Name, cst.Attribute) else None
