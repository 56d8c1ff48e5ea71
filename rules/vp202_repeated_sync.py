"""VP202 repeated-item: the same value synced to the host twice in one scope."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.bindings import READ
from verifier.static.guards import GuardedRule
from verifier.static.host_reads import HostReads
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import dotted_name, method_name, receiver, root_name
from verifier.static.rule import Invalid
from verifier.static.syncs import sync_of_call
from verifier.static.torch_api import mutates_its_receiver
from verifier.static.walk import iter_descendants


class RepeatedSync(LambdaScopes, GuardedRule):
    code = "VP202"
    name = "repeated-item"
    category = Category.SYNC
    # A second read of a value already on the host waits for nothing new: hygiene, not a stall.
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "a second host read of the same value: another round trip to the device for nothing"
    summary = (
        "Finds the same expression read on the host more than once in one scope "
        "(`loss.item()` twice, `.item()` then `float(loss)`) with no reassignment in between, also "
        "across a call: a helper reading what every caller just read, a caller reading what the "
        "helper it called read."
    )
    why = (
        "Each read is a device-to-host copy and a synchronisation. The first read already drained "
        "the queue; the second costs another round trip for a value the code already has."
    )
    example = """\
loss = criterion(model(x), y)
if loss.item() > best:
    best = loss.item()
"""
    use_instead = """\
loss = criterion(model(x), y)
loss_value = loss.item()
if loss_value > best:
    best = loss_value
"""
    fix = "Read the value once into a local (`value = loss.item()`) and reuse it."
    tokens = ("torch", ".item(", ".cpu(", ".numpy(", ".tolist(", "loss", "model(")
    references = ("https://pytorch.org/docs/stable/generated/torch.Tensor.item.html",)
    # The repeated read is a sync too; naming it once, as a repeat, says what to do about it.
    supersedes = ("VP201",)

    def __init__(self, context) -> None:
        super().__init__(context)
        # One map per scope: source of the synced expression -> how it was first read, and in
        # which arm of each conditional expression around it (`_arms`).
        self._seen: list[dict[str, tuple[str | _Elsewhere, frozenset[tuple[int, bool]]]]] = [{}]
        # The conditional expressions (`a if c else b`) being walked, with the calls in their
        # `else` arm: `x.item() if first else total + x.item()` reads `x` once, not twice.
        self._conditional_arms: list[tuple[int, frozenset[int], frozenset[int]]] = []

        # Reads in one branch of an `if` never run together with reads in the other branch.
        self._before_branch: dict[int, dict[str, tuple[str, frozenset[tuple[int, bool]]]]] = {}
        self._before_if: list[dict[str, tuple[str, frozenset[tuple[int, bool]]]]] = []
        # Values read into Python across calls: by every caller, by a callee, by a returning one.
        self._reads = context.tracker(HostReads)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # A parameter every caller read into Python just before the call (`host_reads.py`).
        function = self.context.heat.where().function
        self._seen.append({
            f"{id(None)}:{name}": (_BY_EVERY_CALLER, frozenset())
            for name, fact in (function.bound if function is not None else ()) if fact == READ
        })

    def visit_If(self, node: cst.If) -> None:
        self._enter_branch(node)
        self._before_if.append(dict(self._seen[-1]))
        if node.orelse is not None:
            self._before_branch[id(node.orelse)] = self._before_if[-1]

    def leave_If(self, node: cst.If) -> None:
        self._seen[-1] = self._before_if.pop()

    def visit_Else(self, node: cst.Else) -> None:
        self._enter_branch(node)

    def _enter_branch(self, node: cst.CSTNode) -> None:
        before = self._before_branch.pop(id(node), None)
        if before is not None:
            self._seen[-1] = dict(before)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._seen.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        def calls(arm: cst.BaseExpression) -> frozenset[int]:
            return frozenset(id(n) for n in (arm, *iter_descendants(arm)) if type(n) is cst.Call)

        self._conditional_arms.append((id(node), calls(node.body), calls(node.orelse)))

    def leave_IfExp(self, node: cst.IfExp) -> None:
        self._conditional_arms.pop()

    def _arms_of(self, call: cst.Call) -> frozenset[tuple[int, bool]]:
        """For each conditional expression around `call`: whether it sits in the `if` arm."""
        return frozenset(
            (conditional, id(call) in body)
            for conditional, body, orelse in self._conditional_arms
            if id(call) in body or id(call) in orelse
        )

    def visit_Call(self, node: cst.Call) -> None:
        sync = sync_of_call(node, self.context.facts, self.context.imports)
        if sync is None:
            self._note_read_elsewhere(self._reads.read_by_call(node))
            if mutates_its_receiver(method_name(node)) and receiver(node) is not None:
                self._forget(receiver(node))  # `scaler.update()` between two `get_scale()`s
        if sync is None or not sync.is_explicit_read or self.guarded:
            return
        # A read inside a loop and one after it are different executions, not a repeat.
        loop = self.context.heat.where().innermost_loop
        if _makes_fresh_values(sync.subject):
            return
        subject = self.context.code_for(sync.subject)
        key = f"{id(loop)}:{subject}"
        seen = self._seen[-1]
        arms = self._arms_of(node) if self._conditional_arms else frozenset()
        if key not in seen:
            seen[key] = (sync.how, arms)
            return
        first_how, first_arms = seen[key]
        if any((conditional, not in_body) in first_arms for conditional, in_body in arms):
            return  # the other arm of the same conditional expression: one read runs, not both
        earlier = (
            first_how.text if type(first_how) is _Elsewhere else f"with `{first_how}` in this scope, unchanged since"
        )
        self.report(node, f"`{subject}` is read on the host again with `{sync.how}` (already read {earlier})")

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._forget(target.target)
        self._note_read_elsewhere(self._reads.results_read(node))

    def _note_read_elsewhere(self, reads: list[tuple[str, str, str]]) -> None:
        """Values a call read into Python (`HostReads`): a later read here is the repeat."""
        if not reads or self.guarded:
            return
        loop = self.context.heat.where().innermost_loop
        for name, callee, how in reads:
            said = f"by {callee}, {how}" if how.startswith("which") else f"by {callee} {how}"
            self._seen[-1][f"{id(loop)}:{name}"] = (_Elsewhere(said), frozenset())

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self._forget(node.target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._forget(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._forget(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._forget(node.target)

    def _forget(self, target: cst.BaseExpression) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._forget(element.value)
            return
        name = dotted_name(target) or root_name(target)
        if name is None:
            return
        seen = self._seen[-1]
        if not seen:
            return
        mention = _mention_of(name)
        for key in list(seen):
            if mention.search(key.partition(":")[2]):
                del seen[key]

    VALID = (
        """\
for x in loader:
    loss = model(x).sum()
    loss.backward()
    value = loss.item()
    print(value, value * 2)
""",
        """\
for x in loader:
    loss = model(x).sum()
    print(loss.item())
""",
        """\
for x, y in loader:
    loss = model(x).sum()
    a = loss.item()
    loss = model(y).sum()
    b = loss.item()
    loss.backward()
""",
        """\
for x in loader:
    loss = model(x).sum()
    loss.backward()
    print(loss.item())
print("final", loss.item())
""",
        """\
def summarise(value):
    if value.dim() == 0:
        return value.item()
    else:
        return value.tolist()

for x in loader:
    loss = model(x).sum()
    loss.backward()
    summarise(loss)
""",
        """\
for x in loader:
    model(x).sum().backward()
    seeds = [int(s[i]) for i in range(3)]
    offsets = [int(s[i]) for i in range(3, 6)]
""",
    )
    INVALID = (
        Invalid(
            """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    if loss.item() < best:
        best = loss.item()
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(loss.item())
    log(float(loss))
""",
            line=7,
            severity=Severity.LOW,
        ),
    )


@dataclass(frozen=True)
class _Elsewhere:
    """A first read made outside this scope's lines (`HostReads`): how to say where."""

    text: str


_BY_EVERY_CALLER = _Elsewhere("by every caller just before the call")


@functools.lru_cache(maxsize=1024)
def _mention_of(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")


def _makes_fresh_values(subject: cst.BaseExpression) -> bool:
    """`make_input().item()` twice reads two different values: only plain data paths repeat."""
    return any(
        type(node) is cst.Call and type(node.func) is cst.Name
        for node in (subject, *iter_descendants(subject))
    )
