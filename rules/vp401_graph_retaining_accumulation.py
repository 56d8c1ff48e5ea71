"""VP401 graph-retaining-accumulation: `total += loss` keeps every iteration's autograd graph.

Reported when the added value carries a graph (a model forward, a criterion, tensor math on
them; see `verifier.static.autograd`), grad mode is on, and the accumulator was bound outside
a training step or epoch loop around the addition (or is an attribute set in `__init__`), so
it lives across training iterations; a loop inside one step (an RNN's time loop) does not count.

Not reported: `.item()`, `.detach()`, `float(...)` values; accumulation under `no_grad` or
`inference_mode` (also when a caller in the module disables grad); values of unknown origin;
and accumulators that reach a `backward()` in the same function: that is gradient
accumulation on purpose, and the backward frees the graphs it was built from. In an evaluation
loop without `no_grad` the accumulator holds every batch's activations until the loop ends
(an out-of-memory risk VP404 does not block on), so both rules report it.

CRITICAL only when the activations stay alive (RULES.md): when a `backward()` in the same
function frees the graph of what is added (`loss.backward()` then `total += loss`), the total
only chains small autograd nodes, and the finding is LOW hygiene. The premises: the value
carries a graph (shown by an `nn.Module` forward, or only by names: assumed) with grad on (a
decorator not known to keep it leaves that assumed); no backward frees it (a name handed to
this module's own code, which may run backward, leaves that assumed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat, Status
from verifier.static.autograd import BackwardReach, GradMode
from verifier.static.deferred import deferred
from verifier.static.heat import Where
from verifier.static.names import dotted_name, names_in
from verifier.static.rule import Invalid, Proof
from verifier.static.training_state import TrainingStateRule

# After a backward frees the activations, the total only chains autograd nodes: hygiene.
_HYGIENE = SeverityByHeat(step=Severity.LOW, epoch=Severity.LOW, once=None, eval=Severity.LOW)
_INIT_METHODS = frozenset({"__init__", "reset", "reset_parameters", "setup"})


@dataclass(eq=False)
class _Scope:
    """One function (or the module): where names were bound, and what of it reaches `backward()`
    (the autograd tracker's record of the same function)."""

    reach: BackwardReach
    bindings: dict[str, Where] = field(default_factory=dict)


class GraphRetainingAccumulation(TrainingStateRule):
    code = "VP401"
    name = "graph-retaining-accumulation"
    category = Category.MEMORY
    # In an eval loop without no_grad every batch's graph stays alive: as bad as in training.
    severity = SeverityByHeat(step=Severity.CRITICAL, epoch=Severity.HIGH, once=None, eval=Severity.CRITICAL)
    cost = "every iteration's autograd graph, with its saved activations, kept alive by the running total"
    # A value carries a graph only through a model forward, a criterion or torch math (autograd.py).
    tokens = (
        "torch", "nn.", "self(", "loss", "Loss", "criterion", "Criterion", "model", "Model", "net", "Net",
        "module", "Module", "encoder", "Encoder", "decoder", "Decoder", "backbone", "policy", "Policy",
        "generator", "Generator", "discriminator", "Discriminator", "critic", "Critic", "actor", "Actor",
        "forward",
    )
    summary = (
        "Finds a loss (or any tensor that requires grad) added to an accumulator that lives "
        "across iterations: `total += loss` instead of `total += loss.item()` or `loss.detach()`."
    )
    why = (
        "A tensor that requires grad references the autograd graph that produced it, and with it "
        "the saved activations of the forward pass. `total += loss` makes `total` depend on every "
        "step's graph, so none of them is ever freed: memory grows every step until the run runs "
        "out of memory, and each addition extends the graph further."
    )
    example = """\
total_loss = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    total_loss += loss
"""
    use_instead = """\
total_loss = torch.zeros((), device=device)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    total_loss += loss.detach()  # no graph, no host sync
"""
    fix = "Accumulate `loss.detach()` (stays on the device, no sync) or `loss.item()` at a log interval."
    references = (
        "https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory",
        "https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope(self.autograd.reach())]
        self._function_names: list[str] = []
        # Per class: attribute -> where `__init__` bound it, or None once another method rebinds it.
        self._attributes: list[dict[str, Where | None]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._attributes.append({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._attributes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_Scope(self.autograd.reach()))
        self._function_names.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.pop()
        self._function_names.pop()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if type(node.operator) is cst.AddAssign:
            self._check(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        accumulation = _self_accumulation(node)
        if accumulation is not None:
            self._check(node, *accumulation)

    def leave_Assign(self, node: cst.Assign) -> None:
        if _self_accumulation(node) is not None:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name is not None:
                self._bind(name)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        name = dotted_name(node.target)
        if name is not None and node.value is not None:
            self._bind(name)

    def _bind(self, name: str) -> None:
        where = self.context.heat.here()
        if name.startswith("self."):
            if self._attributes:
                in_init = bool(self._function_names) and self._function_names[-1] in _INIT_METHODS
                attributes = self._attributes[-1]
                attributes[name] = where if in_init and attributes.get(name, where) is not None else None
            return
        self._scopes[-1].bindings[name] = where

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression, added: cst.BaseExpression) -> None:
        name = dotted_name(target)
        if name is None or not self.autograd.carries_graph(added):
            return
        if self.autograd.grad_mode() is not GradMode.ENABLED:
            return
        scope = self._scopes[-1]
        where = self.context.heat.here()
        key = self.autograd.function_key
        is_attribute = name.startswith("self.")
        attributes = self._attributes[-1] if is_attribute and self._attributes else {}
        local_binding = None if is_attribute else scope.bindings.get(name)
        is_training = self.training_loop_predicate()

        added_names = names_in(added)
        # Only values that already carried a graph can have been freed by another backward.
        graph_names = self.autograd.graph_names(added)

        def freed_by() -> cst.Call | None:
            """The `backward()` that frees the graph of what is added, if one is in this scope."""
            return scope.reach.freeing(graph_names)

        def decide() -> SeverityByHeat | None:
            retained = keeps_graphs()
            # A backward frees the activations every step; the total only chains small autograd nodes.
            return _HYGIENE if retained is not None and freed_by() is not None else retained

        def keeps_graphs() -> SeverityByHeat | None:
            if name in scope.reach.backed or name in self.autograd.backed_attributes:
                return None
            if self.autograd.called_without_grad(key):
                return None
            # Attributes are read after the walk: a rebinding in any other method makes them unknown.
            bound = attributes.get(name) if is_attribute else local_binding
            if bound is None:
                return None
            if is_attribute and bound.function is not where.function:
                return self.severity
            if bound.function is not where.function:
                return None
            spanned = [loop for loop in where.loops if loop not in bound.loops]
            # An eval loop with autograd on frees nothing: no backward ever releases the graphs.
            outlives_a_step = any(
                (is_training(loop) and (loop.is_step or loop.is_epoch))
                or (loop.is_eval and where.function is not None and where.function.evaluates)
                or (loop.is_eval and where.function is None)
                for loop in spanned
            )
            return self.severity if outlives_a_step else None

        added_text = self.context.code_for(added)
        graph = self.autograd.graph_status(added)
        grad, grad_text = self.autograd.grad_enabled_proof()
        value_status = max((graph, grad), key=lambda status: list(Status).index(status))
        how = "a module's forward or torch math on one" if graph is Status.PROVEN else "names only (a model- or loss-like call)"
        value = Proof(
            Premise.VALUE, value_status,
            f"`{added_text}` carries an autograd graph (shown by {how}); " + grad_text,
        )

        def rule_premise() -> Proof:
            backward = freed_by()
            if backward is not None:
                return Proof.proven(
                    Premise.RULE,
                    f"`{self.context.code_for(backward)}` frees the saved activations every step; `{name}` still "
                    "chains every step's autograd nodes (host memory)",
                    backward,
                )
            handed = scope.reach.handed_to(added_names)
            if handed is not None:
                return Proof.assumed(
                    Premise.RULE,
                    f"no `backward()` here frees the graph, but `{self.context.code_for(handed.func)}(...)` is given "
                    "it and may",
                    handed,
                )
            return Proof.proven(
                Premise.RULE,
                f"no `backward()` in this function frees the graph of `{added_text}`, and `{name}` outlives the step",
            )

        self.report(
            node,
            f"`{name}` accumulates `{added_text}`, which requires grad: `{name}` chains the autograd graph "
            "of every iteration",
            severity=deferred(decide, outcomes=(self.severity, _HYGIENE)),
            evidence=(value, rule_premise),
        )

    VALID = (
        """\
total = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss.item()
""",
        """\
import torch
total = torch.zeros(())
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss.detach()
    total = total + float(loss)
""",
        """\
accumulated = 0
for i, (x, y) in enumerate(loader):
    accumulated = accumulated + criterion(model(x), y) / accumulation_steps
    if (i + 1) % accumulation_steps == 0:
        accumulated.backward()
        optimizer.step()
        optimizer.zero_grad()
        accumulated = 0
""",
        """\
import torch
total = 0.0
with torch.no_grad():
    for x, y in loader:
        loss = criterion(model(x), y)
        total += loss
""",
        """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss += 0.01 * regulariser(model)
    loss.backward()
    optimizer.step()
""",
        """\
def decode_loss(decoder, hidden, target):
    loss = 0
    for t in range(target.size(1)):
        out, hidden = decoder(target[:, t], hidden)
        loss += criterion(out, target[:, t])
    return loss
""",
        """\
def train(loader, running):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        running += loss
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.nn as nn
model = nn.Linear(16, 4)
total_penalty = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    penalty = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    total_penalty += penalty
""",
            line=9,
            severity=Severity.CRITICAL,
        ),
        Invalid(
            """\
def validate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y)
    return total / len(loader)
""",
            line=5,
            severity=Severity.CRITICAL,
        ),
        Invalid(
            """\
total_loss = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    total_loss += loss
""",
            line=6,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
def train_one_epoch(model, loader, optimizer):
    epoch_loss = 0
    for inputs, labels in loader:
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss = epoch_loss + loss * inputs.size(0)
    return epoch_loss / len(loader.dataset)
""",
            line=9,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
last_losses = 0.0
for epoch in range(epochs):
    for x, y in train_loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    last_losses += loss
""",
            line=7,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        return x

@torch.no_grad()
def log_norms(net, x):
    return net(x).norm()

net = Net()
norms = 0.0
for x, y in loader:
    loss = criterion(net(x), y)
    norms += net(x).norm()
    loss.backward()
    optimizer.step()
""",
            line=15,
            severity=Severity.CRITICAL,
        ),
    )


def _self_accumulation(node: cst.Assign) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`total = total + v` (or `v + total`): the accumulator and the added value."""
    if len(node.targets) != 1 or type(node.value) is not cst.BinaryOperation:
        return None
    if type(node.value.operator) is not cst.Add:
        return None
    target = node.targets[0].target
    name = dotted_name(target)
    if name is None:
        return None
    left, right = node.value.left, node.value.right
    if dotted_name(left) == name:
        return target, right
    if dotted_name(right) == name:
        return target, left
    return None


