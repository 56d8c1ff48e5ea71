"""VP101 list-comprehension-batching: building a batch element by element in Python."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.heat import is_model_name
from verifier.static.names import keyword_arg, positional_arg, terminal_name
from verifier.static.facts import Kind
from verifier.static.implicit_syncs import DeviceValues
from verifier.static.rule import Invalid, Proof, Rule
from verifier.static.walk import iter_descendants

_JOINS = frozenset(
    {"torch.stack", "torch.cat", "torch.concat", "torch.concatenate", "torch.vstack", "torch.hstack"}
)


class ListComprehensionBatching(Rule):
    code = "VP101"
    name = "list-comprehension-batching"
    category = Category.DATA
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=None)
    cost = "one Python-level gather and copy per sample every step, where one indexed gather does the same"
    # `torch.stack`, `torch.cat` and their aliases (`concat`, `vstack`) all contain one of these;
    # `torch.tensor(` for labels collated by hand.
    tokens = ("stack", "cat", "tensor(")
    summary = (
        "Finds batches built one element at a time in a Python comprehension: "
        "`torch.stack/cat([x[i] for i in idx])` (an index gather), "
        "`torch.stack([model(x) for x in images])` over a tensor (batch-1 forwards), and "
        "`torch.stack([img for img, _ in chunk])` / `torch.tensor([lbl for _, lbl in chunk])` over a "
        "slice of samples (collation by hand)."
    )
    why = (
        "Each element is a separate indexing op that allocates a small tensor, then the join copies "
        "them all again: O(batch) Python-level ops and launches per step where one gather does it."
    )
    example = """\
ix = torch.randint(len(data) - block, (batch_size,))
x = torch.stack([data[i : i + block] for i in ix])
"""
    use_instead = """\
ix = torch.randint(len(data) - block, (batch_size,))
x = data[ix[:, None] + torch.arange(block)]
"""
    fix = "Index once: `x[idx]` or `x.index_select(0, idx)`; for windows `x[idx[:, None] + torch.arange(n)]`; or let a DataLoader batch."
    references = (
        "https://pytorch.org/docs/stable/generated/torch.index_select.html",
        "https://pytorch.org/docs/stable/data.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._values = context.tracker(DeviceValues)
        # Names bound to a slice of samples in the current scope (`chunk = dataset[i:i + bs]`).
        self._sample_slices: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._sample_slices.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._sample_slices.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if type(target.target) is cst.Name:
                if _is_slice(node.value):
                    self._sample_slices[-1].add(target.target.value)
                else:
                    self._sample_slices[-1].discard(target.target.value)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.imports.call_name(node)
        if qualified not in _JOINS and qualified != "torch.tensor":
            return
        arg = positional_arg(node, 0) or keyword_arg(node, "tensors")
        if arg is None or type(arg.value) not in (cst.ListComp, cst.GeneratorExp):
            return
        comprehension = arg.value
        if comprehension.for_in.inner_for_in is not None:
            return
        target = comprehension.for_in.target
        if self._collates_samples(node, qualified, comprehension) or qualified not in _JOINS:
            return
        if type(target) is not cst.Name:
            return
        if self._forwards_each_row(node, qualified, comprehension, target.value):
            return
        element = _indexed_element(comprehension.elt, target.value)
        if element is None:
            return
        window = any(type(s.slice) is cst.Slice for s in element.slice)
        premise = self._gather_premise(element.value, window)
        if premise is None:
            return
        source = self.context.code_for(element.value)
        how = f"`{source}[idx[:, None] + torch.arange(n)]`" if window else f"`{source}[idx]`"
        self.report(
            node,
            f"`{qualified.rsplit('.', 1)[-1]}` over a comprehension indexes `{source}` once per element; gather with {how}",
            evidence=(premise,),
        )

    def _forwards_each_row(self, node: cst.Call, qualified: str, comprehension, name: str) -> bool:
        """`torch.stack([model(x) for x in images])` over a tensor: one batch-1 forward per row,
        where one forward on the whole batch does the same work in one launch per layer."""
        iterated = comprehension.for_in.iter
        # A tensor held in a name: `x.split(64)` or `torch.chunk(x, 4)` are micro-batches by design.
        if type(iterated) not in (cst.Name, cst.Attribute):
            return False
        if self.context.facts.kind_of(iterated) is not Kind.TENSOR and not self._values.on_device(iterated):
            return False
        model = next(
            (call for call in (comprehension.elt, *iter_descendants(comprehension.elt))
             if type(call) is cst.Call and is_model_name(terminal_name(call.func)) and _mentions(call.args, name)),
            None,
        )
        if model is None:
            return False
        rows, called = self.context.code_for(iterated), self.context.code_for(model.func)
        self.report(
            node,
            f"`{qualified.rsplit('.', 1)[-1]}` over a comprehension runs `{called}` once per row of `{rows}` "
            f"(batch-1 forwards); run it once on the whole batch",
            evidence=(Proof.proven(
                Premise.VALUE, f"`{rows}` is a tensor: the comprehension runs one forward per row (sample)"
            ),),
        )
        return True

    def _collates_samples(self, node: cst.Call, qualified: str, comprehension) -> bool:
        """`torch.stack([img for img, _ in chunk])` with `chunk = dataset[i:i + bs]`: a batch
        collated by hand, one sample at a time, where a DataLoader collates (in workers)."""
        target, iterated = comprehension.for_in.target, comprehension.for_in.iter
        if type(target) not in (cst.Tuple, cst.List) or type(comprehension.elt) is not cst.Name:
            return False
        fields = {e.value.value for e in target.elements if type(e.value) is cst.Name}
        if comprehension.elt.value not in fields:
            return False
        if not (_is_slice(iterated) or (type(iterated) is cst.Name and iterated.value in self._sample_slices[-1])):
            return False
        samples = self.context.code_for(iterated)
        self.report(
            node,
            f"`{qualified.rsplit('.', 1)[-1]}` over a comprehension collates `{comprehension.elt.value}` from "
            f"`{samples}` one sample at a time; let a DataLoader batch and collate (in its workers)",
            evidence=(Proof.proven(
                Premise.VALUE, f"`{samples}` is a slice of samples unpacked into their fields: a batch built by hand"
            ),),
        )
        return True

    def _gather_premise(self, container: cst.BaseExpression, window: bool) -> Proof | None:
        """The rule's value premise: what is indexed per element is one tensor or array, which a
        single gather indexes. A window (`data[i : i + n]`) stacked as a tensor says so (a list's
        slice is a list), though not which: unknown, so LOW. A plain element of a container not
        shown to be one is reported not at all: a Python list of tensors (of different shapes,
        say) has no single gather, and on judged real code every such finding was wrong
        (twelve of twelve, docs/rule-precision.md)."""
        kind = self.context.facts.kind_of(container)
        shown = self.context.code_for(container)
        if kind in (Kind.TENSOR, Kind.NUMPY):
            what = "a tensor" if kind is Kind.TENSOR else "a NumPy array"
            return Proof.proven(Premise.VALUE, f"`{shown}` is {what}: one indexed gather reads the whole batch")
        if not window:
            return None
        return Proof.unknown(
            Premise.VALUE, f"`{shown}` is sliced into windows, so it is a tensor or an array, but which is not shown"
        )

    VALID = (
        """\
import torch
x = data[ix]
y = torch.stack([a, b])
""",
        # `cache` is a parameter nobody shows to be one tensor: a list of tensors has no gather.
        """\
import torch

def gather(cache, ix):
    return torch.cat([cache[i] for i in ix])

for step in range(max_steps):
    x = gather(embeddings, torch.randint(100, (8,)))
    model(x).sum().backward()
""",
        """\
import torch
for x, y in loader:
    parts = torch.cat([head(x) for head in heads])
    parts.sum().backward()
""",
        # Micro-batches by design, and a list of pairs that is no slice of samples.
        """\
import torch
for x, y in loader:
    x = x.cuda(non_blocking=True)
    out = torch.cat([model(part) for part in x.split(64)])
    out2 = torch.cat([model(part) for part in torch.chunk(x, 4)])
    grads = torch.stack([g for g, _ in pairs])
    loss = criterion(out + out2, y.cuda(non_blocking=True)) + grads.sum()
    loss.backward()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for x, y in loader:
    images = x.cuda(non_blocking=True)
    feats = torch.stack([model(img.unsqueeze(0)) for img in images])
    loss = criterion(feats.squeeze(1), y.cuda(non_blocking=True))
    loss.backward()
""",
            line=4,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
for i in range(0, len(dataset), batch_size):
    chunk = dataset[i:i + batch_size]
    labels = torch.tensor([lbl for _, lbl in chunk])
    loss = criterion(model(inputs[i:i + batch_size]), labels)
    loss.backward()
""",
            line=4,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """import torch

def get_batch(data, ix, block):
    return torch.stack([data[i : i + block] for i in ix])

for step in range(max_steps):
    x = get_batch(train_data, torch.randint(100, (8,)), 64)
    model(x).sum().backward()
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch

tokens = torch.randint(0, 50_000, (1_000_000,))

def get_batch(ix, block):
    return torch.stack([tokens[i : i + block] for i in ix])

for step in range(max_steps):
    x = get_batch(torch.randint(100, (8,)), 64)
    model(x).sum().backward()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch as t
features = t.randn(1000, 16)
for epoch in range(3):
    pool = t.cat([features[i] for i in keep])
    for xb in loader:
        model(xb).sum().backward()
""",
            line=4,
            severity=Severity.LOW,
        ),
    )


def _is_slice(node: cst.BaseExpression) -> bool:
    """`dataset[i:i + bs]`: a run of consecutive samples."""
    return type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Slice


def _reads(nodes, name: str) -> bool:
    """Any of `nodes` (or what they hold) names `name`."""
    return any(
        type(part) is cst.Name and part.value == name for node in nodes for part in (node, *iter_descendants(node))
    )


def _uses(slices, name: str) -> bool:
    return _reads((element.slice for element in slices), name)


def _mentions(args, name: str) -> bool:
    return _reads((arg.value for arg in args), name)


def _indexed_element(element: cst.BaseExpression, name: str) -> cst.Subscript | None:
    """`data[i]`, or the `data[i:i+n]` inside a per-element conversion such as
    `torch.from_numpy(data[i:i+n].astype(np.int64))`; None when the element runs a model."""
    if type(element) is cst.Subscript:
        return element if _uses(element.slice, name) else None
    if type(element) is not cst.Call:
        return None
    found = None
    for node in iter_descendants(element):
        if type(node) is cst.Call and is_model_name(terminal_name(node.func)):
            return None
        if found is None and type(node) is cst.Subscript and _uses(node.slice, name):
            found = node
    return found
