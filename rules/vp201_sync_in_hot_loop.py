"""VP201 sync-in-hot-loop: a host-device synchronisation inside the per-step loop."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.guards import GuardedRule
from verifier.static.rule import Invalid
from verifier.static.scaler import is_finite_guard
from verifier.static.syncs import Sync, sync_of_call, sync_of_fstring, sync_of_test


# The value's place is not known (a parameter, a batch element, an unknown call's result):
# reported as LOW hygiene at most, never as a per-step stall.
_UNPROVEN = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})


class SyncInHotLoop(GuardedRule):
    code = "VP201"
    name = "sync-in-hot-loop"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None)
    summary = (
        "Finds reads of tensor values on the host inside the per-step loop: `.item()`, `.cpu()`, "
        "`.numpy()`, `.tolist()`, `float/int/bool(tensor)`, printing or formatting a tensor, "
        "and `if tensor:` tests."
    )
    why = (
        "CUDA work is queued asynchronously. Reading a value on the host makes the CPU wait until "
        "the queue drains, so the next step cannot be queued while the GPU works: every step pays "
        "a pipeline bubble. Once per epoch this costs nothing measurable; once per step it does."
    )
    example = """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running += loss.item()
"""
    use_instead = """\
running = torch.zeros((), device=device)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running += loss.detach()
print(running.item() / len(loader))
"""
    fix = "Accumulate on the device (`total += loss.detach()`) and read once per log interval or epoch."
    tokens = ("torch", ".item(", ".cpu(", ".numpy(", ".tolist(", "loss", "model(")
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Inside `raise ...(f"{t}")` the sync only happens on the error path.
        self._raising = 0
        # One statement, one finding: a second read in it adds nothing the first did not say.
        self._statement: cst.CSTNode | None = None
        self._reported: set[int] = set()
        self._host_made: set[str] = set()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def leave_Assign(self, node: cst.Assign) -> None:
        # `t = torch.tensor(mean_reward, device=device)`: a host value put on the device (to
        # all-reduce it); reading it back waits for that collective, not for the step's work.
        for target in node.targets:
            if type(target.target) is cst.Name:
                if self._from_host_value(node.value):
                    self._host_made.add(target.target.value)
                else:
                    self._host_made.discard(target.target.value)

    def _from_host_value(self, value: cst.BaseExpression) -> bool:
        if type(value) is not cst.Call or self.context.imports.call_name(value) not in _FACTORIES:
            return False
        first = value.args[0].value if value.args and value.args[0].keyword is None else None
        return first is not None and not self.context.facts.is_tensor(first)

    def visit_Raise(self, node: cst.Raise) -> None:
        self._raising += 1

    def leave_Raise(self, node: cst.Raise) -> None:
        self._raising -= 1

    def visit_Call(self, node: cst.Call) -> None:
        self._report(sync_of_call(node, self.context.facts, self.context.imports))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._report(sync_of_fstring(node, self.context.facts))

    def visit_If(self, node: cst.If) -> None:
        # An isfinite() guard around scaler.step is VP305's finding; one line, one finding.
        if not is_finite_guard(node, self.context):
            self._report(sync_of_test(node.test, self.context.facts, self.context.imports))

    def visit_While(self, node: cst.While) -> None:
        self._report(sync_of_test(node.test, self.context.facts, self.context.imports))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._report(sync_of_test(node.test, self.context.facts, self.context.imports))

    def visit_Assert(self, node: cst.Assert) -> None:
        self._report(sync_of_test(node.test, self.context.facts, self.context.imports))

    def _report(self, sync: Sync | None) -> None:
        # Under `if step % log_every == 0:` the read happens once per interval: the recommended pattern.
        if sync is None or self._raising or self.guarded or not self.context.may_use_accelerator:
            return
        statement = id(self._statement) if self._statement is not None else None
        if statement is not None and statement in self._reported:
            return
        if statement is not None and type(sync.node) is not cst.If and type(sync.node) is not cst.While:
            self._reported.add(statement)
        subject = self.context.code_for(sync.subject)
        proven = self.context.facts.is_tensor(sync.subject) and not (
            type(sync.subject) is cst.Name and sync.subject.value in self._host_made
        )
        self.report(
            sync.node,
            f"`{sync.how}` of `{subject}` {{loop}} waits for the device {{often}}",
            severity=None if proven else _UNPROVEN,
        )

    VALID = (
        """\
import torch
device = "cuda"
for epoch in range(10):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
print(loss.item())
""",
        """\
import torch
total = torch.zeros((), device="cuda")
for step, (x, y) in enumerate(train_loader):
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.detach()
    if step % 100 == 0:
        print(f"step {step}: mean loss {total.item() / (step + 1):.4f}")
""",
        """\
import torch
device = "cuda"
total = torch.zeros((), device=device)
for x, y in train_loader:
    x, y = x.to(device), y.to(device)
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    total += loss.detach()
""",
        """\
for name in ["a", "b"]:
    value = float(name_to_value[name])
""",
        """\
import numpy as np

def cosine(total):
    return np.cos(np.linspace(0, np.pi, total))

device = "cuda"
schedules = {"lr": cosine(100)}
for step, batch in enumerate(loader):
    model(batch.to(device)).sum().backward()
    optimizer.step()
    lr = schedules["lr"][step].item()
""",
        """\
import torch
device = "cuda"
for x in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    optimizer.step()
    if loss is None:
        continue
    if strict:
        raise FloatingPointError(f"loss became {loss}")
    remote_module.cpu()
""",
    )
    INVALID = (
        Invalid(
            """\
device = "cuda"
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(loss.item())
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
def read(loss):
    return loss.item()

device = "cuda"
for step in range(num_steps):
    loss = model(batch.to(device)).sum()
    loss.backward()
    optimizer.step()
    total = read(loss)
""",
            line=2,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
device = "cuda"
for batch in batches:
    batch = batch.to(device)
    loss = torch.nn.functional.mse_loss(model(batch), batch)
    if torch.isnan(loss):
        break
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
    out = model(x.to(device))
    out.sum().backward()
    optimizer.step()
    predictions.append(out.argmax(-1).cpu().numpy())
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
    )
