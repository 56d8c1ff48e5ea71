"""VP101 list-comprehension-batching: building a batch element by element in Python."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.heat import is_model_name
from verifier.static.names import keyword_arg, positional_arg, terminal_name
from verifier.static.facts import Kind
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
    # `torch.stack`, `torch.cat` and their aliases (`concat`, `vstack`) all contain one of these.
    tokens = ("stack", "cat")
    summary = (
        "Finds `torch.stack/cat([x[i] for i in idx])`: a batch gathered one element at a time "
        "in a Python comprehension."
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

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.imports.call_name(node)
        if qualified not in _JOINS:
            return
        arg = positional_arg(node, 0) or keyword_arg(node, "tensors")
        if arg is None or type(arg.value) not in (cst.ListComp, cst.GeneratorExp):
            return
        comprehension = arg.value
        target = comprehension.for_in.target
        if type(target) is not cst.Name or comprehension.for_in.inner_for_in is not None:
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
    )
    INVALID = (
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


def _uses(slices, name: str) -> bool:
    for element in slices:
        for node in (element.slice, *iter_descendants(element.slice)):
            if type(node) is cst.Name and node.value == name:
                return True
    return False


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
