"""VP201 sync-in-hot-loop: a host-device synchronisation inside the per-step loop."""

from __future__ import annotations

import functools

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.deferred import DeferredSeverity, JudgementInput, deferred
from verifier.static.facts import TENSOR_METHODS, Kind
from verifier.static.guards import GuardedRule
from verifier.static.heat import is_environment_step
from verifier.static.implicit_syncs import SHAPE_METHODS
from verifier.static.names import method_name, terminal_name
from verifier.static.places import Place, Placement
from verifier.static.rule import Candidate, Invalid, Proof
from verifier.static.scaler import is_finite_guard
from verifier.static.syncs import Sync, sync_of_call, sync_of_fstring, sync_of_size, sync_of_slice, sync_of_test
from verifier.static.walk import iter_descendants


# The value's place is not known (a parameter, a batch element, an unknown call's result):
# reported as LOW hygiene at most, never as a per-step stall.
_UNPROVEN = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
# A read per parameter tensor every step: hundreds of launch-and-wait round trips per update.
_PER_PARAMETER = SeverityByHeat(step=Severity.HIGH, epoch=None, once=None)
_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})


def _is_parameter_collection(node: cst.BaseExpression) -> bool:
    """`model.parameters()`, `self.master_params`, `params`: the tensors of a model."""
    if type(node) is cst.Call:
        return method_name(node) in _PARAMETER_METHODS
    return "param" in (terminal_name(node) or "").lower()


def _is_environment_step(node: cst.Assign) -> bool:
    return is_environment_step([t.target for t in node.targets], node.value)


# What may run between two reads for the second to cost a round trip only (`_queues_little`):
# not torch's modules, autograd, device or collective calls, which may queue a model's work.
_NOT_SMALL_MATH = ("torch.nn", "torch.autograd", "torch.cuda", "torch.distributed", "torch.utils")
_NUMBER_BUILTINS = frozenset({"float", "int", "len", "round", "abs", "min", "max", "bool"})
_HOST_LIST_METHODS = frozenset({"append", "extend"})


def _design_read(table: SeverityByHeat) -> SeverityByHeat:
    """At most LOW. A table still to be decided (a module that is lent its device by a caller's
    module) is lowered once it is decided."""
    if isinstance(table, DeferredSeverity):
        outcomes = None if table.outcomes is None else tuple(map(_design_read, table.outcomes))
        return deferred(
            lambda: None if (decided := table.decide()) is None else _design_read(decided), outcomes, table.reads
        )
    return _UNPROVEN if table.step is not None and table.step > Severity.LOW else table


def _ids_within(node: cst.CSTNode) -> set[int]:
    return {id(node), *map(id, iter_descendants(node))}


def _if_accelerated(function, table: SeverityByHeat) -> SeverityByHeat | None:
    return table if function.accelerated else None


def _shape_sync_within(subject: cst.BaseExpression) -> cst.Call | None:
    """`x.nonzero().item()`, `pred.eq(gold).masked_select(mask).sum().item()`: an operation whose
    output size is read from the data (VP205's) in the value read: the host has waited for the
    queue by the time its result exists, so reading that result waits only for a round trip."""
    for node in (subject, *iter_descendants(subject)):
        if type(node) is cst.Call and type(node.func) in (cst.Attribute, cst.Name):
            name = node.func.attr.value if type(node.func) is cst.Attribute else node.func.value
            if name in SHAPE_METHODS:
                return node
    return None


def on_the_accelerator(subject: str, placement: Placement | None, is_tensor: bool) -> Proof:
    """The value premise of a host read: the value is a tensor on the accelerator."""
    if placement is not None and placement.place is Place.DEVICE:
        return Proof.proven(Premise.VALUE, f"`{subject}` is on the accelerator: {placement.why}", placement.node)
    if is_tensor:
        return Proof.assumed(
            Premise.VALUE, f"`{subject}` is a tensor in code that uses a device; where it lives is not shown"
        )
    return Proof.unknown(Premise.VALUE, f"`{subject}` is not known to be a tensor on the accelerator")


class SyncInHotLoop(GuardedRule):
    code = "VP201"
    name = "sync-in-hot-loop"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None)
    cost = "a host read of a device value: the host waits until the device's queue drains"
    summary = (
        "Finds reads of tensor values on the host inside the per-step loop: `.item()`, `.cpu()`, "
        "`.tolist()`, `float/int/bool(tensor)`, `max/min(tensor, ...)`, `math.isnan(tensor)` and other "
        "`math` functions, a device tensor as a slice bound (`x[:n]`), printing or formatting a tensor, "
        "and `if tensor:` tests (`.numpy()` only after the `.cpu()` that reads)."
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
    premises = (Premise.VALUE,)
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Inside `raise ...(f"{t}")` the sync only happens on the error path; so does an
        # `assert`'s message, built only when the assertion fails.
        self._raising = 0
        self._assert_messages: set[int] = set()
        # One statement, one finding: a second read in it adds nothing the first did not say.
        self._statement: cst.CSTNode | None = None
        self._reported: set[int] = set()
        self._host_made: set[str] = set()
        # Reads whose value an environment step consumes (`obs, r, term, trunc, info =
        # envs.step(actions)`): the host needs them every step by design, so at most LOW.
        self._env_calls: set[int] = set()
        self._in_env_call = 0
        self._read_into: dict[str, list[Candidate]] = {}
        # Statement -> the statement before it in its block (for reads that follow a read), and
        # the first statement of a branch's or `with`'s block -> that `if`, `with` or `try`.
        self._previous: dict[int, cst.CSTNode] = {}
        self._opened_by: dict[int, cst.CSTNode] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    # A compound statement's header (`for a, b in zip(t.cpu(), u.cpu()):`) is a statement of its own.
    def visit_For(self, node: cst.For) -> None:
        self._statement = node

    def visit_With(self, node: cst.With) -> None:
        self._statement = node
        self._note_opened_by(node, node.body)

    def visit_Try(self, node: cst.Try) -> None:
        self._note_opened_by(node, node.body)

    def _note_opened_by(self, owner: cst.CSTNode, body: cst.BaseSuite) -> None:
        if type(body) is cst.IndentedBlock and body.body:
            self._opened_by[id(body.body[0])] = owner

    def visit_Assign(self, node: cst.Assign) -> None:
        if _is_environment_step(node):
            self._env_calls.add(id(node.value))
            for arg in node.value.args:
                if type(arg.value) is cst.Name:
                    for candidate in self._read_into.pop(arg.value.value, ()):
                        candidate.severity = _design_read(candidate.severity)

    def leave_Assign(self, node: cst.Assign) -> None:
        # `actions = q.argmax(1).cpu().numpy()`: remember the read by its target's name.
        found = self.candidates[-1] if self.candidates and self._statement_reported(node) else None
        for target in node.targets:
            if type(target.target) is cst.Name:
                if found is not None:
                    self._read_into.setdefault(target.target.value, []).append(found)
                else:
                    self._read_into.pop(target.target.value, None)
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

    def _membership_on_the_host(self, subject: cst.BaseExpression) -> bool:
        """`best_n not in anchors_mask[l]` of a host tensor and a list: comparing its elements
        reads host memory (the place model says nothing of a membership test's operands)."""
        if type(subject) is not cst.Comparison or len(subject.comparisons) != 1:
            return False
        if type(subject.comparisons[0].operator) not in (cst.In, cst.NotIn):
            return False
        sides = (subject.left, subject.comparisons[0].comparator)
        places = [self.context.places.placement_of(side) for side in sides]
        on_host = [found is not None and found.place is Place.HOST for found in places]
        if any(not host and self.context.facts.is_tensor(side) for side, host in zip(sides, on_host)):
            return False  # a tensor not shown in host memory takes part
        return any(on_host)

    def visit_Raise(self, node: cst.Raise) -> None:
        self._raising += 1

    def leave_Raise(self, node: cst.Raise) -> None:
        self._raising -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if id(node) in self._env_calls:
            self._in_env_call += 1
        on_device = self.context.places.computes_on_device
        self._report(sync_of_call(node, self.context.facts, self.context.imports, on_device))
        self._report_shown(sync_of_size(node, self.context.facts, self.context.imports, on_device))

    def leave_Call(self, node: cst.Call) -> None:
        if id(node) in self._env_calls:
            self._in_env_call -= 1

    def _statement_reported(self, node: cst.Assign) -> bool:
        return self._statement is not None and id(self._statement) in self._reported and (
            id(self.candidates[-1].node) in _ids_within(node.value)
        )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._report_shown(sync_of_slice(node, self.context.facts, self.context.places.computes_on_device))

    def _report_shown(self, sync: Sync | None) -> None:
        """A slice bound or a size (`torch.zeros(b, lengths.max())`), reported only when shown on
        the device: slicing or sizing by tensors of unknown place is as common in host-side
        bookkeeping (`cum = torch.tensor(sizes).cumsum(0)`) as in a training step."""
        if sync is None:
            return
        placement = self.context.places.placement_of(sync.subject)
        if placement is not None and placement.place is Place.DEVICE and not placement.guessed:
            self._report(sync)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._report(sync_of_fstring(node, self.context.facts))

    def visit_If(self, node: cst.If) -> None:
        self._statement = node
        self._note_opened_by(node, node.body)
        if type(node.orelse) is cst.Else:
            self._note_opened_by(node, node.orelse.body)
        # An isfinite() guard around scaler.step is VP305's finding; one line, one finding.
        if not is_finite_guard(node, self.context):
            self._report(self._test_sync(node.test))

    def _test_sync(self, test: cst.BaseExpression) -> Sync | None:
        return sync_of_test(test, self.context.facts, self.context.imports, self.context.places.computes_on_device)

    def visit_While(self, node: cst.While) -> None:
        self._statement = node
        self._report(self._test_sync(node.test))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._report(self._test_sync(node.test))

    def visit_Assert(self, node: cst.Assert) -> None:
        self._report(self._test_sync(node.test))
        if node.msg is not None:
            self._assert_messages |= _ids_within(node.msg)

    def _report(self, sync: Sync | None) -> None:
        # Under `if step % log_every == 0:` the read happens once per interval: the recommended pattern.
        if sync is None or self._raising or self.guarded or id(sync.node) in self._assert_messages:
            return
        placement = self.context.places.placement_of(sync.subject)
        if placement is not None and placement.place is Place.HOST:
            return  # a host tensor: reading it waits for nothing
        if self._membership_on_the_host(sync.subject):
            return
        # A module that never names a device holds host tensors, unless a function of it is
        # called from a module that does (a helper the training script calls every step), or
        # the value is shown on the device (returned there by a helper of another module).
        shown = placement is not None and placement.place is Place.DEVICE
        function = None if self.context.may_use_accelerator or shown else self.context.heat.where().function
        if function is None and not (self.context.may_use_accelerator or shown):
            return
        statement = id(self._statement) if self._statement is not None else None
        if statement is not None and statement in self._reported:
            return
        if statement is not None and type(sync.node) is not cst.If and type(sync.node) is not cst.While:
            self._reported.add(statement)
        subject = self.context.code_for(sync.subject)
        proven = (self.context.facts.is_tensor(sync.subject) or (shown and not placement.guessed)) and not (
            type(sync.subject) is cst.Name and sync.subject.value in self._host_made
        ) and not self.context.places.contested(sync.subject)
        table = self.severity if proven or sync.reads_a_scaler else _UNPROVEN
        per_parameter = proven and self._in_loop_over_parameters(sync.subject)
        if per_parameter:
            table = _PER_PARAMETER
        if self._in_env_call:
            table = _design_read(table)
        # Once per parameter tensor even a round trip is hundreds of them a step: kept as it is.
        follows = self._follows_a_read() if self._loop_over_parameters() is None else None
        drained = None if follows is not None else _shape_sync_within(sync.subject)
        if follows is not None or drained is not None:
            table = _design_read(table)
        if function is not None:
            table = deferred(
                functools.partial(_if_accelerated, function, table), outcomes=(table,), reads=(JudgementInput.DEVICE,)
            )
        often = "once per parameter tensor {often}" if per_parameter else "{often}"
        cost = () if follows is None else (
            Proof.proven(
                Premise.COST,
                "a round trip only: an earlier read in this block already waited for the device's queue (only host arithmetic since)",
                follows,
            ),
        )
        if drained is not None:
            cost = (
                Proof.proven(
                    Premise.COST,
                    f"a round trip only: `{self.context.code_for(drained)}` in the value read already waited for the "
                    "device's queue to learn its output size (VP205's finding)",
                    drained,
                ),
            )
        value = on_the_accelerator(subject, placement, proven) if not sync.reads_a_scaler else Proof.assumed(
            Premise.VALUE,
            f"`{subject}` is a GradScaler: it keeps its scale on the device it scales for (CUDA unless "
            f"constructed for another), and `{sync.how}` reads it with `.item()`",
        )
        self.report(
            sync.node, f"`{sync.how}` of `{subject}` {{loop}} waits for the device {often}", severity=table,
            evidence=(*cost, value),
        )

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for before, statement in zip(node.body, node.body[1:]):
            self._previous[id(statement)] = before

    def _follows_a_read(self) -> cst.CSTNode | None:
        """An earlier statement of this one's block that read a device value too, with nothing
        between them but host arithmetic and a little math on tensors already computed (`acc =
        a.item()`, `acc_sum += acc`, `correct = (pred == y).sum()`, then `loss.item()`): the queue
        was drained there and holds only those small kernels, so this read costs a round trip,
        not a stall."""
        statement = self._statement
        while statement is not None:
            before = self._previous.get(id(statement))
            if before is None:
                # The first statement of a branch or a `with`: what ran before the `if` (its test
                # as well) or the `with` runs before it in the same iteration.
                statement = self._opened_by.get(id(statement))
                if statement is None or not self._header_queues_little(statement):
                    return None
                continue
            if id(before) in self._reported:
                return before
            if not self._queues_little(before):
                return None
            statement = before
        return None

    def _header_queues_little(self, statement: cst.CSTNode) -> bool:
        """An `if`'s test, a `with`'s items: evaluated between the earlier statements and the block."""
        header = statement.test if type(statement) is cst.If else statement.items if type(statement) is cst.With else ()
        parts = header if isinstance(header, (tuple, list)) else (header,)
        return all(
            self._small_call(node) for part in parts for node in (part, *iter_descendants(part)) if type(node) is cst.Call
        )

    def _queues_little(self, statement: cst.CSTNode) -> bool:
        """A simple statement that runs no model, backward, update or project function: its calls
        are tensor math on values in hand (a comparison, a reduction, a cast), torch's own math
        functions, a few number builtins, or a host list's `append`."""
        if type(statement) is not cst.SimpleStatementLine:
            return False
        for node in iter_descendants(statement):
            kind = type(node)
            if kind in (cst.Lambda, cst.Await, cst.Yield):
                return False
            if kind is cst.Call and not self._small_call(node):
                return False
        return True

    def _small_call(self, call: cst.Call) -> bool:
        """A call that queues at most a small kernel on values in hand, or nothing on the device."""
        facts = self.context.facts
        qualified = self.context.imports.call_name(call) or ""
        if qualified:
            return qualified.startswith("torch.") and not qualified.startswith(_NOT_SMALL_MATH)
        name = method_name(call)
        if name is not None and type(call.func) is cst.Attribute:
            owner = facts.kind_of(call.func.value)
            if name in TENSOR_METHODS:
                return owner is Kind.TENSOR
            return name in _HOST_LIST_METHODS and owner is not Kind.TENSOR and not self.context.heat.callee_key(call)
        return type(call.func) is cst.Name and call.func.value in _NUMBER_BUILTINS

    def _in_loop_over_parameters(self, subject: cst.BaseExpression) -> bool:
        """`for p in params: norm(p).item()`: the read runs once per parameter tensor."""
        node = self._loop_over_parameters()
        if node is None:
            return False
        targets = {n.value for n in (node.target, *iter_descendants(node.target)) if type(n) is cst.Name}
        return any(type(n) is cst.Name and n.value in targets for n in iter_descendants(subject))

    def _loop_over_parameters(self) -> cst.For | None:
        """The innermost loop, when it iterates a model's parameters."""
        loop = self.context.heat.where().innermost_loop
        node = loop.node if loop is not None else None
        return node if type(node) is cst.For and _is_parameter_collection(node.iter) else None

    VALID = (
        # An assertion's message is built only when the assertion fails.
        """\
import torch
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
    assert y.numel() > 0, f"empty batch after {loss.item()}"
""",
        # An asynchronous copy into pinned host memory (kept for later, not read here) waits for nothing.
        """\
import torch
preds = []
for x, y in loader:
    out = model(x.cuda(non_blocking=True))
    out.sum().backward()
    optimizer.step()
    preds.append(out.detach().to("cpu", non_blocking=True))
""",
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
        Invalid(
            """\
import torch
device = "cuda"
for iteration in range(iterations):
    for step in range(num_steps):
        with torch.no_grad():
            action = policy(obs)
        obs, reward, done, info = envs.step(action)
        obs, done = torch.tensor(obs).to(device), torch.tensor(done).to(device)
        for index, finished in enumerate(done):
            if finished:
                episodes += 1
    loss = policy(obs).sum()
    loss.backward()
    optimizer.step()
""",
            line=10,
            severity=Severity.MEDIUM,
        ),
    )
