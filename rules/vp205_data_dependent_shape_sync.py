"""VP205 data-dependent-shape-sync: an operator whose output size depends on device data, per step.

`nonzero`/`argwhere` (with or without `as_tuple`), one-argument `torch.where`, boolean-mask
reads `t[mask]`, `masked_select`, `unique`/`unique_consecutive`, `repeat_interleave` with a
tensor of repeats and no `output_size`, and `x in t`. Each needs the size of its result before
it can allocate it, so the host copies a count back and waits for the device. Only values with
evidence that they live on the accelerator are reported (see `verifier.static.implicit_syncs`).
`t[mask] = values` with a tensor of values is reported too (`index_put_` turns the mask into
indices with `nonzero`); a scalar or a number is not (it dispatches to `masked_fill_`). `if x in
t:` is VP201's finding (a tensor tested on the host).
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.facts import Kind
from verifier.static.guards import GuardedRule
from verifier.static.implicit_syncs import DeviceValues, ShapeSync, shape_sync_of_call
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import method_name
from verifier.static.rule import Invalid
from verifier.static.syncs import sync_of_test


_MASKED_STORE = "boolean-mask assignment of a tensor"
# Methods only a tensor answers with a tensor: the value stored is many elements, not a scalar.
_TENSOR_RESHAPES = frozenset(
    {"view", "reshape", "flatten", "expand", "expand_as", "repeat", "squeeze", "unsqueeze", "permute",
     "transpose", "contiguous", "to", "type_as", "float", "half", "bfloat16", "detach", "clone"}
)


class DataDependentShapeSync(LambdaScopes, GuardedRule):
    code = "VP205"
    name = "data-dependent-shape-sync"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None)
    cost = "an operator whose output size depends on the data: the host waits for the count"
    summary = (
        "Finds operators whose output size depends on the values of a device tensor inside the "
        "per-step loop: `nonzero`, one-argument `torch.where`, boolean-mask indexing `t[mask]`, "
        "`masked_select`, `unique`, `repeat_interleave` with a tensor of repeats and no "
        "`output_size`, and `x in t`."
    )
    why = (
        "A kernel's output is allocated before it runs. When its size depends on the data, "
        "PyTorch first computes the size on the device, copies it to the host and waits: an "
        "implicit synchronisation as costly as `.item()`, hidden in an ordinary-looking "
        "expression, every step. Fixed-size forms (`torch.where(c, a, b)`, `masked_fill`, "
        "multiplying by the mask, `output_size=`) keep the queue full. Measured on CPU, where "
        "nothing waits and only the extra count pass shows (`pytest -m slow "
        "tests/benchmarks/test_bench_implicit_syncs.py --benchmark-only`, one thread, 2^20 floats, "
        "shared 2-core machine): `x[x > 0].sum()` median 15.5 ms, `torch.where(x > 0, x, 0.0).sum()` "
        "8.6 ms; `repeat_interleave` of 4096 rows 68 us, with `output_size=` 60 us. On a GPU the "
        "data-dependent forms also drain the queue every call."
    )
    example = """\
for x, y in loader:
    x, y = x.to(device), y.to(device)
    logits = model(x)
    keep = y != ignore_index
    loss = criterion(logits[keep], y[keep])
    loss.backward()
    optimizer.step()
"""
    use_instead = """\
for x, y in loader:
    x, y = x.to(device), y.to(device)
    logits = model(x)
    loss = F.cross_entropy(logits, y, ignore_index=ignore_index)
    loss.backward()
    optimizer.step()
"""
    fix = (
        "Keep shapes static: `torch.where(cond, a, b)`, `masked_fill`, multiply by the mask, "
        "`ignore_index=`, or pass `output_size=` to `repeat_interleave`."
    )
    # A boolean mask can be any comparison: every module that uses torch is a candidate.
    tokens = ("torch",)
    references = (
        "https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html",
        "https://pytorch.org/docs/stable/generated/torch.nonzero.html",
        "https://pytorch.org/docs/stable/generated/torch.repeat_interleave.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._values = context.tracker(DeviceValues)
        # Names bound to boolean device tensors, per function scope.
        self._masks: list[set[str]] = [set()]
        self._stores: set[int] = set()
        # `if x in t:`: VP201 reports the tested tensor; one line, one finding.
        self._tested: set[int] = set()
        # `loss = criterion(logits[keep], y[keep])`: one statement, one finding.
        self._statement: cst.CSTNode | None = None
        self._reported: set[int] = set()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._masks.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._masks.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if type(target.target) is cst.Subscript:
                self._stores.add(id(target.target))
                self._note_masked_store(target.target, node.value)

    def _note_masked_store(self, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """`embd[mask] = image_embd.view(-1, d)`: a tensor of values stored through a boolean
        mask is an `index_put_`, which takes the mask's `nonzero` first (a scalar would not)."""
        if len(target.slice) != 1 or type(target.slice[0].slice) is not cst.Index:
            return
        if not self.context.may_use_accelerator or not self._is_tensor(value):
            return
        index = target.slice[0].slice.value
        if self._values.is_mask(index, self._masks[-1]):
            self._report(ShapeSync(target, index, _MASKED_STORE))

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if type(target.target) is cst.Name:
                name = target.target.value
                if self._values.is_mask(node.value, self._masks[-1]):
                    self._masks[-1].add(name)
                else:
                    self._masks[-1].discard(name)

    def _is_tensor(self, value: cst.BaseExpression) -> bool:
        """A tensor by the facts, on the device, or reshaped, cast or moved as only tensors are."""
        if self.context.facts.kind_of(value) is Kind.TENSOR or self._values.on_device(value):
            return True
        return type(value) is cst.Call and method_name(value) in _TENSOR_RESHAPES

    def visit_If(self, node: cst.If) -> None:
        self._note_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._note_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._note_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._note_test(node.test)

    def _note_test(self, test: cst.BaseExpression) -> None:
        sync = sync_of_test(test, self.context.facts, self.context.imports)
        if sync is not None:
            self._tested.add(id(sync.node))

    def visit_Call(self, node: cst.Call) -> None:
        self._report(shape_sync_of_call(node, self._values))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if id(node) in self._stores or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return
        if not self.context.may_use_accelerator:
            return
        index = node.slice[0].slice.value
        if self._values.is_mask(index, self._masks[-1]):
            self._report(ShapeSync(node, index, "boolean-mask indexing"))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if id(node) in self._tested or len(node.comparisons) != 1 or not self.context.may_use_accelerator:
            return
        comparison = node.comparisons[0]
        # `0 in preds` reads the tensor; `"aux_outputs" in outputs` looks a key up in a dict
        # (the facts decide which a membership test is).
        if (
            type(comparison.operator) in (cst.In, cst.NotIn)
            and self.context.facts.kind_of(node) is Kind.TENSOR
            and self._values.on_device(comparison.comparator)
        ):
            self._report(ShapeSync(node, comparison.comparator, "`in` on a tensor"))

    def _report(self, sync: ShapeSync | None) -> None:
        if sync is None or self.guarded or not self.context.may_use_accelerator:
            return
        if self._statement is not None:
            if id(self._statement) in self._reported:
                return
            self._reported.add(id(self._statement))
        if sync.how == _MASKED_STORE:
            self.report(
                sync.node,
                f"storing a tensor through boolean mask `{self.context.code_for(sync.subject)}` {{loop}} turns "
                "the mask into indices first (`nonzero`), so the host waits for the device {often}; "
                "`masked_scatter` or `torch.where` keep the shapes static",
            )
            return
        self.report(
            sync.node,
            f"{sync.how} on device tensor `{self.context.code_for(sync.subject)}` {{loop}}: its output "
            "size depends on the data, so the host waits for the device {often}",
        )

    VALID = (
        """\
import torch
device = "cuda"
for x, y in loader:
    x, y = x.to(device), y.to(device)
    out = model(x)
    out = torch.where(out > 0, out, torch.zeros_like(out))
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
""",
        """\
import torch
device = "cuda"
for x, y in loader:
    logits = model(x.to(device))
    counts = logits.argmax(-1)
    expanded = logits.repeat_interleave(counts, dim=0, output_size=total)
    doubled = logits.repeat_interleave(2, dim=0)
    loss = criterion(expanded, y.to(device)) + doubled.mean()
    loss.backward()
    optimizer.step()
""",
        """\
import torch
weights = torch.zeros(1000)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    active = torch.nonzero(weights > 0)
""",
        """\
import torch
for x, y in loader:
    logits = model(x)
    picked = logits[logits > 0]
    loss = picked.sum()
    loss.backward()
    optimizer.step()
""",
        """\
import torch
device = "cuda"
for step, (x, y) in enumerate(loader):
    logits = model(x.to(device))
    loss = criterion(logits, y.to(device))
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(torch.unique(logits.argmax(-1)))
    logits[logits < 0] = 0
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for input_ids, image in loader:
    input_ids = input_ids.cuda(non_blocking=True)
    embd = model.embed(input_ids)
    mask = input_ids == image_token_id
    embd[mask] = model.vision(image.cuda(non_blocking=True)).view(-1, embd.size(-1))
    embd[mask] = 0.0
    loss = model(embd).sum()
    loss.backward()
    optimizer.step()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
device = "cuda"
for x, y in loader:
    logits = model(x.to(device))
    keep = logits.sum(-1) > 0
    loss = logits[keep].sum()
    loss.backward()
    optimizer.step()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
device = "cuda"
for x, y in loader:
    scores = model(x.to(device))
    hits = torch.where(scores > 0)
    loss = scores.sum()
    loss.backward()
    optimizer.step()
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
device = "cuda"
model.eval()
with torch.no_grad():
    for x in val_loader:
        logits = model(x.to(device))
        classes = logits.argmax(-1).unique()
""",
            line=7,
            severity=Severity.LOW,
        ),
    )
