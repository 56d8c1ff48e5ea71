"""VP105 dataloader-reiterated-to-count: a whole pass over a DataLoader only to count its batches.

Covers `len(list(loader))`, `len(tuple(loader))`, `len([b for b in loader])` and
`sum(1 for _ in loader)` (also over `iter(loader)` / `enumerate(loader)`), where `loader` is
known to be a DataLoader: bound from `DataLoader(...)` in the module, or named as one (`loader`,
`train_loader`, `self.val_dataloader`, `train_dl`). Samplers, datasets and other iterables are
not: counting a sampler costs nothing worth reporting.
"""

from __future__ import annotations

import re

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.dataloader import DATALOADERS
from verifier.static.facts import Kind
from verifier.static.names import dotted_name, positional_arg, terminal_name
from verifier.static.rule import Invalid, Rule

_LOADER_NAME = re.compile(r"loaders?\d*$|(^|_)dl\d*$", re.IGNORECASE)
_MATERIALISERS = frozenset({"list", "tuple"})
_WRAPPERS = frozenset({"iter", "enumerate"})


class DataloaderReiteratedToCount(Rule):
    code = "VP105"
    name = "dataloader-reiterated-to-count"
    category = Category.DATA
    severity = SeverityByHeat(step=Severity.HIGH, epoch=Severity.MEDIUM, once=Severity.LOW, eval=Severity.MEDIUM)
    cost = "a full pass over the DataLoader (every batch loaded and collated) only to count its batches"
    tokens = ("len(list(", "len(tuple(", "len([", "sum(1 for", "sum([1 for")
    summary = (
        "Finds `len(list(loader))`, `sum(1 for _ in loader)` and the like on a DataLoader: a whole "
        "pass of loading and collation just to count the batches."
    )
    why = (
        "Iterating a DataLoader runs every `__getitem__`, every transform and every collation, and "
        "starts (and tears down) its worker processes: `len(list(loader))` costs as much data "
        "loading as a training epoch without the model, and keeps every batch in memory at once. "
        "A map-style loader already knows its length: `len(loader)` is a division. Once per epoch "
        "the extra pass can nearly double a data-bound epoch. Measured on one CPU thread (`pytest -m "
        "slow tests/benchmarks/test_bench_growth_and_loaders.py`: 4096 in-memory 3x32x32 images, "
        "a per-sample normalisation, batch 64, no workers): `len(list(loader))` median 212 ms, "
        "`len(loader)` 0.6 µs."
    )
    example = """\
def train_epoch(model, train_loader, optimizer):
    total = 0.0
    for x, y in train_loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / len(list(train_loader))
"""
    use_instead = """\
def train_epoch(model, train_loader, optimizer):
    total = 0.0
    for x, y in train_loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / len(train_loader)
"""
    fix = (
        "Use `len(loader)` (batches) or `len(loader.dataset)` (samples); for an iterable-style "
        "dataset count the batches in the training loop you already run, or compute it once."
    )
    references = (
        "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader",
        "https://pytorch.org/docs/stable/data.html#dataset-types",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is not cst.Name or node.func.value not in ("len", "sum") or len(node.args) != 1:
            return
        counted = _counted_iterable(node, node.func.value)
        if counted is None or not self._is_loader(counted):
            return
        source = self.context.code_for(counted)
        self.report(
            node,
            f"`{self.context.code_for(node)}` iterates the whole DataLoader `{source}` {{often}} only to "
            f"count it: a full extra pass of loading and collation; use `len({source})`",
            fix=f"Use `len({source})` (or `len({source}.dataset)` for samples).",
        )

    def _is_loader(self, node: cst.BaseExpression) -> bool:
        if type(node) is cst.Call:
            return self.context.imports.call_name(node) in DATALOADERS
        if type(node) not in (cst.Name, cst.Attribute) or dotted_name(node) is None:
            return False
        kind = self.context.facts.kind_of(node)
        if kind is not None:
            return kind is Kind.DATALOADER
        return bool(_LOADER_NAME.search(terminal_name(node) or ""))

    VALID = (
        """\
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size=32, num_workers=4)
for epoch in range(10):
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    print(epoch, len(loader), len(loader.dataset))
""",
        """\
for epoch in range(10):
    for x, y in train_loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    n_params = len(list(model.parameters()))
    n_indices = len(list(train_loader.sampler))
    n_good = sum(1 for p in model.parameters() if p.requires_grad)
""",
    )
    INVALID = (
        Invalid(
            """\
def train(model, train_dl, optimizer):
    losses = 0.0
    for src, tgt in train_dl:
        loss = model(src, tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses += loss.detach()
    return losses / len(list(train_dl))

for epoch in range(20):
    train(model, train_dl, optimizer)
""",
            line=9,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
from torch.utils.data import DataLoader
batches = DataLoader(stream, batch_size=16)
steps_total = sum(1 for _ in batches)
""",
            line=3,
            severity=Severity.LOW,
        ),
    )


def _counted_iterable(call: cst.Call, function: str) -> cst.BaseExpression | None:
    """What `len(list(x))` / `len([.. for _ in x])` / `sum(1 for _ in x)` iterates, else None."""
    argument = positional_arg(call, 0)
    if argument is None:
        return None
    value = argument.value
    if function == "len":
        if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in _MATERIALISERS:
            inner = positional_arg(value, 0)
            if inner is None or len(value.args) != 1:
                return None
            return _unwrap(inner.value)
        if type(value) is cst.ListComp and value.for_in.inner_for_in is None and not value.for_in.ifs:
            return _unwrap(value.for_in.iter)
        return None
    if type(value) in (cst.GeneratorExp, cst.ListComp) and value.for_in.inner_for_in is None:
        element = value.elt
        if type(element) is cst.Integer and element.value == "1":
            return _unwrap(value.for_in.iter)
    return None


def _unwrap(node: cst.BaseExpression) -> cst.BaseExpression:
    """`iter(loader)` and `enumerate(loader)` iterate `loader` itself."""
    while type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in _WRAPPERS and node.args:
        node = node.args[0].value
    return node
