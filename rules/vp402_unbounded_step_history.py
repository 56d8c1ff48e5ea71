"""VP402 unbounded-step-history: a list that grows by one entry every step and is never cut.

Tracks lists bound to `[]`/`list()` (locals, module globals, and attributes set in `__init__`)
and their `.append(value)` in per-step code. How long the list lives decides the finding:
- a value that carries an autograd graph (see `verifier.static.autograd`) is HIGH whenever the
  list outlives one step: every step's graph and activations stay alive with it;
- any other tensor is HIGH, and a Python value (`.item()`, `float(...)`, `.cpu()`) LOW, only
  when the list lives for the whole run (bound at module level, outside a loop over the run's
  epochs or a `while` loop, or in a function called once; never cleared, trimmed or rebound while
  the loops run) and the loop trains (`backward()` or an optimizer step in it): outputs collected
  over one pass of a dataset are bounded by it, and so are the losses of one RL update's repeats
  (`for _ in range(repeat): for minibatch in batch.split(n):`), summarised when the call ends.
Lists recreated per step or per epoch, trimmed every N steps (`.clear()`, `.pop()`, `del h[:]`,
`h = h[-k:]`), bounded containers (`deque(maxlen=...)`), values of unknown kind, and tensors
that never were part of a graph in a list its function returns (`return masks`: data it
collects as its result, handed on; a returned loss history is still a history) are not reported. In an evaluation loop without `no_grad`, graph-carrying outputs are VP404's finding.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Heat, Premise, Severity, SeverityByHeat, Status
from verifier.static.autograd import GradMode
from verifier.static.bindings import RUN_LIST
from verifier.static.deferred import JudgementInput, deferred
from verifier.static.facts import Kind
from verifier.static.heat import LoopInfo, Where, called_once
from verifier.static.guards import GuardedRule
from verifier.static.names import dotted_name, method_name, positional_arg, receiver
from verifier.static.rule import Invalid, Proof
from verifier.static.run_lists import is_new_list
from verifier.static.training_state import TrainingStateRule

_TRIMMING_METHODS = frozenset({"clear", "pop", "remove"})
_HOST_METHODS = frozenset({"item", "tolist", "numpy", "cpu"})
_HOST = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
# The decision reads the loops around the append and, outside loops, only whether the method
# runs every step (`_per_step_hook`); never the device.
_READS = (JudgementInput.LOOPS, JudgementInput.RUNS_EVERY_STEP)


@dataclass(eq=False)
class _History:
    """A list binding: where it was made and where it was cut (cleared, trimmed, rebound)."""

    name: str
    bound: Where
    attribute: bool = False
    cuts: list[Where] = field(default_factory=list)
    # The binding's value (`[]`), for the line of the evidence.
    node: cst.CSTNode | None = None
    # A parameter every caller hands a run-long list (`run_lists.py`, bound by the project pass).
    from_callers: bool = False


class UnboundedStepHistory(GuardedRule, TrainingStateRule):
    code = "VP402"
    name = "unbounded-step-history"
    category = Category.MEMORY
    severity = SeverityByHeat(step=Severity.HIGH, epoch=None, once=None)
    cost = "device memory (and autograd graphs) kept for every step of the run"
    tokens = ("append",)
    summary = (
        "Finds per-step `history.append(value)` into a list that is never cleared: tensors that "
        "keep their graph (or device memory) are HIGH, Python numbers LOW."
    )
    why = (
        "A loss appended as a tensor keeps its autograd graph, and with it the saved activations "
        "of that step: memory grows every step until the run fails. A detached tensor still holds "
        "a device allocation per entry. Even Python floats grow host memory for the whole run when "
        "the list is never cut; keep a running sum or a bounded window instead."
    )
    example = """\
losses = []
for epoch in range(epochs):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
"""
    use_instead = """\
for epoch in range(epochs):
    epoch_loss = torch.zeros((), device=device)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.detach()
    print(epoch, epoch_loss.item() / len(loader))
"""
    fix = (
        "Append `loss.item()` at a log interval, or accumulate `loss.detach()` on the device and "
        "reset it per epoch; use `collections.deque(maxlen=N)` for a moving window."
    )
    references = (
        "https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory",
        "https://docs.python.org/3/library/collections.html#collections.deque",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes: list[dict[str, _History | None]] = [{}]
        self._classes: list[dict[str, _History | None]] = []
        self._function_names: list[str] = []
        # The names each function (by id; None: the module) returns as lists of its result.
        self._returned: dict[int, set[str]] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append({})
        self._function_names.append(node.name.value)
        function = self.context.heat.where().function
        if function is None or function.node is not node:
            return
        for name, fact in function.bound:
            if fact == RUN_LIST:
                # Made once at module level by every caller: it lives for the run, as if global.
                self._scopes[-1][name] = _History(name, Where(None, ()), from_callers=True)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()
        self._function_names.pop()

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method != "append" and method not in _TRIMMING_METHODS:
            return
        owner = receiver(node)
        name = dotted_name(owner) if owner is not None else None
        if name is None:
            return
        if method in _TRIMMING_METHODS:
            self._cut(name)
        elif method == "append" and len(node.args) == 1 and not self.guarded:
            # Under `if step % N == 0:` or `if step > total - 20:` the list grows slowly or not at all.
            self._check(node, name, positional_arg(node, 0))

    def visit_Return(self, node: cst.Return) -> None:
        function = self.context.heat.where().function
        returned = self._returned.setdefault(id(function), set())
        returned.update(_returned_names(node.value))

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assign(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value)

    def visit_Del(self, node: cst.Del) -> None:
        if type(node.target) is cst.Subscript:
            name = dotted_name(node.target.value)
            if name is not None:
                self._cut(name)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if type(target) in (cst.Tuple, cst.List):
            # `d_losses, g_losses = [], []` binds each name to its own value.
            values = value.elements if type(value) in (cst.Tuple, cst.List) else ()
            for index, element in enumerate(target.elements):
                paired = values[index].value if index < len(values) and len(values) == len(target.elements) else cst.Name("None")
                self._assign(element.value, paired)
            return
        if type(target) is cst.Subscript:
            name = dotted_name(target.value)
            if name is not None:
                self._cut(name)
            return
        name = dotted_name(target)
        if name is None:
            return
        self._cut(name)
        where = self.context.heat.here()
        history = _History(name, where, attribute=name.startswith("self."), node=value) if is_new_list(value) else None
        # An attribute made outside `__init__` may be remade per epoch by a hook: unknown lifetime.
        if history is not None and history.attribute and self._function_names[-1:] != ["__init__"]:
            history = None
        self._scope_for(name)[name] = history

    def _cut(self, name: str) -> None:
        history = self._lookup(name)
        if history is not None:
            history.cuts.append(self.context.heat.here())

    def _scope_for(self, name: str) -> dict[str, _History | None]:
        if name.startswith("self."):
            return self._classes[-1] if self._classes else {}
        return self._scopes[-1]

    def _lookup(self, name: str) -> _History | None:
        if name.startswith("self."):
            return self._classes[-1].get(name) if self._classes else None
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def _check(self, node: cst.Call, name: str, value: cst.Arg | None) -> None:
        history = self._lookup(name)
        if history is None and "." not in name:
            self.context.heat.note_dependency(name, "list")  # a parameter: its callers may hand a run-long list
        if history is None or value is None or value.star:
            return
        # A value of unknown kind still grows a run-long list by one entry per step: LOW at least.
        kind = self._kind_of(value.value) or "unknown"
        where = self.context.heat.here()
        text = self.context.code_for(value.value)
        is_training = self.training_loop_predicate()
        trains = self.evaluation.grad_use()

        reach = self.autograd.reach()
        graph_names = self.autograd.graph_names(value.value)

        def kept() -> str | None:
            """What each entry keeps alive once the step's own backward has run: a graph's saved
            activations, unless that backward frees them (then the tensor itself)."""
            if kind == "graph" and reach.freeing(graph_names) is not None:
                return "tensor"
            return kind

        def decide() -> SeverityByHeat | None:
            step_loop = next((loop for loop in where.loops if loop.is_step and is_training(loop)), None)
            entry = kept()
            if step_loop is None and _per_step_hook(where, self.context.heat) and history.attribute and not history.cuts:
                # A hook the training loop calls every step, growing a list made in `__init__`.
                return self.severity if entry in ("graph", "tensor") else _HOST
            lifetime = _lifetime(
                history, where, step_loop, lambda fn: called_once(fn, self.context.heat), run_loops
            )
            if step_loop is None and lifetime == "run" and _runs_every_step(where) and entry in ("graph", "tensor"):
                # A helper the step loop calls, growing a list made at module level.
                return self.severity
            if entry == "graph":
                return self.severity if lifetime in {"epoch", "call", "run"} else None
            if entry == "tensor" and kind == "graph" and (lifetime != "run" or not trains(step_loop)):
                return None
            if kind == "tensor" and not graph_names and name in self._returned.get(id(history.bound.function), ()):
                # `return masks`: data the function collects, never part of a graph, is its
                # result, handed to its caller; a history of losses (detached or freed by their
                # backward) returned for plotting still grows every step.
                return None
            if kind == "unknown" and not history.attribute:
                return None
            # Collecting detached outputs over one pass of a dataset is bounded by the data: only
            # a loop that trains (backward or optimizer step) runs for the whole run.
            if lifetime != "run" or not trains(step_loop):
                return None
            return self.severity if entry == "tensor" else _HOST

        # Read now: the loops' headers are text of this walk's tree.
        run_loops = [loop for loop in where.loops if _spans_the_run(loop, self.context.code_for)]
        severity = deferred(decide, outcomes=(self.severity, _HOST), reads=_READS)

        # Read now: the facts of the function are gone once the walk is done.
        graph = (self.autograd.graph_status(value.value) or Status.ASSUMED) if kind == "graph" else None
        grad, grad_text = self.autograd.grad_enabled_proof()

        def value_premise() -> Proof:
            backward = reach.freeing(graph_names) if kind == "graph" else None
            if backward is not None:
                return Proof.proven(
                    Premise.VALUE,
                    f"`{text}` is a tensor; `{self.context.code_for(backward)}` frees its graph's activations, "
                    "so each entry keeps the tensor itself",
                    backward,
                )
            if graph is not None:
                weakest = max((graph, grad), key=list(Status).index)
                return Proof(
                    Premise.VALUE, weakest,
                    f"`{text}` carries an autograd graph and no `backward()` here frees it; {grad_text}",
                )
            if kind == "tensor":
                return Proof.proven(Premise.VALUE, f"`{text}` is a tensor")
            if kind == "host":
                return Proof.proven(Premise.VALUE, f"`{text}` is a Python value on the host")
            return Proof.unknown(Premise.VALUE, f"what `{text}` is, is not known")

        lifetime = Proof.proven(
            Premise.RULE,
            f"every caller hands `{name}` a list its module makes once and never clears, trims or rebinds"
            if history.from_callers
            else f"`{name}` is made once for the loop's whole life and never cleared, trimmed or rebound in it",
            history.node,
        )
        self.report(
            node, _MESSAGES[kind].format(name=name, value=text), severity=severity, evidence=(value_premise, lifetime)
        )

    def _kind_of(self, value: cst.BaseExpression) -> str | None:
        """"graph", "tensor" (no graph, may hold device memory), "host" (a Python value), or None."""
        graph_on = self.autograd.grad_mode() is GradMode.ENABLED and self.evaluation.reason() is None
        if graph_on and self.autograd.carries_graph(value):
            return "graph"
        if type(value) is cst.Call and method_name(value) in _HOST_METHODS:
            return "host"
        kind = self.context.facts.kind_of(value)
        if kind is Kind.NUMBER:
            return "host"
        return "tensor" if kind is Kind.TENSOR else None

    VALID = (
        """\
for epoch in range(epochs):
    epoch_losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        epoch_losses.append(loss.detach())
    print(torch.stack(epoch_losses).mean().item())
""",
        """\
window = []
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    window.append(loss.item())
    if step % 100 == 0:
        print(sum(window) / len(window))
        window.clear()
""",
        """\
from collections import deque
recent = deque(maxlen=100)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    recent.append(loss.item())
""",
        """\
def train_one_epoch(loader):
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return sum(losses) / len(losses)
""",
        """\
history = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    history.append(lr_schedule(step))
""",
        """\
import torch
predictions = []
model.eval()
with torch.no_grad():
    for x, _ in test_loader:
        predictions.append(model(x).argmax(-1))
""",
        """\
import torch

def decode(decoder, hidden, steps):
    outputs = []
    for t in range(steps):
        out, hidden = decoder(hidden)
        outputs.append(out)
    return torch.stack(outputs)
""",
    )
    INVALID = (
        Invalid(
            """\
losses = []
for epoch in range(epochs):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
""",
            line=7,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
history = []
for epoch in range(epochs):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
""",
            line=7,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
def train_one_epoch(model, loader):
    model.train()
    embeddings = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        embeddings.append(model.encoder(x))
    return embeddings
""",
            line=8,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
import torch
losses = []
for step, batch in enumerate(loader):
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    losses.append(loss.detach())
""",
            line=7,
            severity=Severity.HIGH,
        ),
    )


_MESSAGES = {
    "unknown": (
        "`{name}` grows by one entry every step for the whole run and is never cleared: "
        "it grows without bound"
    ),
    "graph": (
        "`{name}.append({value})` keeps every step's `{value}` (a tensor with an autograd graph) alive as long "
        "as `{name}`"
    ),
    "tensor": (
        "`{name}` grows by one tensor every step for the whole run and is never cleared: its "
        "memory (device memory for CUDA tensors) grows without bound"
    ),
    "host": "`{name}` grows by one Python value every step for the whole run and is never cleared",
}



def _returned_names(value: cst.BaseExpression | None) -> set[str]:
    """The names a `return` hands back as they are: `return masks`, `return model, masks`."""
    if value is None:
        return set()
    if type(value) in (cst.Tuple, cst.List):
        return {name for element in value.elements for name in _returned_names(element.value)}
    name = dotted_name(value)
    return {name} if name is not None else set()


def _per_step_hook(where: Where, heat) -> bool:
    """Code outside loops in a method that its own class's training loop calls every step."""
    function = where.function
    if where.loops or function is None or function.heat is not Heat.STEP or "." not in function.key:
        return False
    owner = function.key.rsplit(".", 1)[0] + "."
    return any(
        other.key.startswith(owner) and other.has_step_loop and other.trains_transitively
        for other in heat.functions
    )


def _runs_every_step(where: Where) -> bool:
    """Code outside loops in a function that runs every step (a helper the step loop calls)."""
    return not where.loops and where.function is not None and where.function.heat is Heat.STEP


# A loop over the run's epochs says so: its target, bound or header names them.
_EPOCHS = re.compile(r"epoch", re.IGNORECASE)


def _spans_the_run(loop: LoopInfo, code_for: Callable[[cst.CSTNode], str]) -> bool:
    """A loop around the step loop that is the run's own: `for epoch in range(epochs)`, or a
    `while` that steps until a budget or forever. `for _ in range(repeat)` around the minibatches
    of one update (an RL update, a federated client's local pass) is part of one call."""
    node = loop.node
    if type(node) is cst.While:
        return True
    if type(node) is not cst.For:
        return False
    return any(_EPOCHS.search(name) for name in loop.targets) or bool(_EPOCHS.search(code_for(node.iter)))


def _lifetime(
    history: _History,
    append: Where,
    step_loop: LoopInfo | None,
    called_once: Callable | None = None,
    run_loops: Collection[LoopInfo] = (),
) -> str | None:
    """How long the list lives relative to the training step loop around the append.

    "step": recreated or cut within each step; "epoch": recreated or cut in a loop around the
    step loop; "call": local to the function that runs the step loop (called more than once);
    "run": all of the run.
    None when the relation is unknown.
    """
    bound = history.bound
    if history.attribute:
        return "run" if not history.cuts else None
    if bound.function is not append.function:
        return "run" if bound.function is None and not history.cuts else None
    if step_loop is None or step_loop in bound.loops:
        return "step"
    if any(step_loop in cut.loops for cut in history.cuts):
        return "step"
    outer = append.loops[: append.loops.index(step_loop)]
    spanned = [loop for loop in outer if loop not in bound.loops]
    if any(loop in cut.loops for cut in history.cuts for loop in spanned) or bound.loops:
        return "epoch"
    if bound.function is None or any(loop.is_epoch and loop in run_loops for loop in spanned):
        return "run"
    # A local of the function that runs the step loop lives for the run when that function is
    # called once (`main()`, the whole training); per epoch or per round, or by callers not seen,
    # it lives for one call, even around a loop of repeats (`for _ in range(repeat):` over the
    # minibatches of one RL update is no epoch loop of the run).
    return "run" if called_once is not None and called_once(bound.function) else "call"
