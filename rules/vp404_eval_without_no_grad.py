"""VP404 eval-without-no-grad: an evaluation loop that runs the model with autograd on.

An evaluation loop is a loop that calls a model (a model-like name, a module this function put
in eval mode, `self(...)`) after `model.eval()` / `model.train(False)` in the same function, or
in a function named like `validate`, `evaluate`, `eval`, `test`, `predict`, `inference`. Grad
mode is off under `with torch.no_grad()/inference_mode()/set_grad_enabled(False)`, under the
same decorators, after a `torch.set_grad_enabled(False)` statement, in Lightning's
`validation_step`/`test_step`/`predict_step`, and when any call of the function the project shows
disables it, at the call or further out (a caller decorated `@torch.no_grad()`, in any module).
Loops that need gradients (`backward()`, `torch.autograd.grad`, `requires_grad_()`) and
unittest/pytest test functions are not evaluation loops. A model whose parameters this function
froze before the loop (`model.requires_grad_(False)`, or `for _, v in model.named_parameters():
v.requires_grad = False`) records no graph on inputs that need none, and is not reported. One finding per loop, at its first model call.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.autograd import GradMode
from verifier.static.deferred import EVERY_INPUT, JudgementInput, deferred
from verifier.static.heat import called_once
from verifier.static.names import dotted_name, method_name
from verifier.static.rule import Invalid
from verifier.static.training_state import TrainingStateRule
from verifier.static.walk import iter_descendants


# What `decide()` reads of the resolved heat: the loops, the function's heat (once per run?),
# and whether some call runs the function with autograd off.
_READS = (*EVERY_INPUT, JudgementInput.GRAD_OFF_CALLER)
# An evaluation the run makes once (a final test pass): its graphs cost once, not every epoch.
# Judged on real code, such passes reported MEDIUM were worth fixing in none of 13.
_ONCE_PER_RUN = SeverityByHeat(step=Severity.LOW, epoch=None, once=None, eval=Severity.LOW)


class EvalWithoutNoGrad(TrainingStateRule):
    code = "VP404"
    name = "eval-without-no-grad"
    category = Category.MEMORY
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None, eval=Severity.MEDIUM)
    cost = "activations saved for a backward that never runs, in every evaluation batch"
    # `.eval()`, `.train(False)`, or a function named for evaluation (`validate`, `test_step`, `predict`).
    tokens = ("val", "Val", "test", "Test", "infer", "Infer", "predict", "Predict", "train")
    summary = (
        "Finds evaluation loops (after `model.eval()`, or in `validate`/`evaluate`/`test`-like "
        "functions) that call the model without `torch.no_grad()` or `torch.inference_mode()`."
    )
    why = (
        "`model.eval()` switches dropout and batch norm to inference behaviour; it does not turn "
        "autograd off. Every batch still records a graph and keeps the forward activations alive "
        "until the outputs are dropped: more memory (smaller batches fit), slower forwards, and a "
        "leak when outputs or losses are collected across batches."
    )
    example = """\
def validate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum()
    return correct.item() / len(loader.dataset)
"""
    use_instead = """\
@torch.inference_mode()
def validate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(-1) == y).sum()
    return correct.item() / len(loader.dataset)
"""
    fix = "Wrap the loop in `with torch.inference_mode():` (or `torch.no_grad()`), or decorate the function with it."
    references = (
        "https://pytorch.org/docs/stable/generated/torch.inference_mode.html",
        "https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported_loops: set[int] = set()
        # Per function key ("" at module level): the modules whose parameters it froze so far.
        self._frozen: dict[str, set[str]] = {}

    def _function_key(self) -> str:
        function = self.context.heat.where().function
        return function.key if function is not None else ""

    def visit_For(self, node: cst.For) -> None:
        frozen = _frozen_by_loop(node)
        if frozen is not None:
            self._frozen.setdefault(self._function_key(), set()).add(frozen)

    def visit_Call(self, node: cst.Call) -> None:
        frozen = _frozen_by_call(node)
        if frozen is not None:
            self._frozen.setdefault(self._function_key(), set()).add(frozen)
            return
        # The cheap tests first: most calls are not in an evaluation loop at all.
        reason = self.evaluation.reason()
        if reason is None:
            return
        loops = self.context.heat.where().loops
        if not loops or any(id(loop) in self._reported_loops for loop in loops):
            return
        if not (self.autograd.is_model_call(node) or self.evaluation.evaluates(node)):
            return
        if self.autograd.grad_mode() is not GradMode.ENABLED:
            return
        if _module_called(node) in self._frozen.get(self._function_key(), ()):
            return  # its parameters need no gradient: the forward records no graph
        loop = loops[-1]
        self._reported_loops.add(id(loop))
        key = self.autograd.function_key
        uses_grad = self.evaluation.grad_use()
        function, heat = self.context.heat.where().function, self.context.heat
        # A script that also trains makes its one-off evaluation a final test after training; an
        # evaluation script's one pass is all the work it does.
        trains_too = self.context.mentions_in_code("backward(")

        def decide() -> SeverityByHeat | None:
            # A loop that trains, here or through a call (`optimizer_step(loss, ...)`), needs its
            # graph, whatever its function is called (`train_validate`).
            if uses_grad(loop) or loop.is_step or self.autograd.called_without_grad(key):
                return None
            if function is not None and function.grad_off_caller:
                # A call the project shows (here or in another module, or further out: `evaluate()`
                # decorated `@torch.no_grad()` calling this) runs it with autograd off.
                return None
            if trains_too and len(loops) == 1 and (function is None or called_once(function, heat)):
                # The final test pass a training script makes once, at its top level or in a
                # function it calls once: its graphs cost one pass of the test set per run.
                return _ONCE_PER_RUN
            return self.severity

        self.report(
            node,
            f"`{self.context.code_for(node.func)}(...)` runs in an evaluation loop ({reason}) with "
            "autograd on: every batch records a graph and keeps its activations",
            severity=deferred(decide, outcomes=(self.severity, _ONCE_PER_RUN), reads=_READS),
        )

    VALID = (
        """\
import torch

def update(loss, optimizer):
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()

def train_validate(model, loader, optimizer):
    model.train()
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        update(loss, optimizer)
""",
        """\
import torch

def validate(model, loader):
    model.eval()
    total = 0
    with torch.no_grad():
        for x, y in loader:
            total += criterion(model(x), y).item()
    return total / len(loader)
""",
        """\
import torch

@torch.inference_mode()
def evaluate(model, loader):
    model.eval()
    return [model(x).argmax(-1) for x, _ in loader]
""",
        """\
import torch

def evaluate(model, loader):
    outputs = []
    for x, _ in loader:
        outputs.append(model(x))
    return outputs

def main():
    model.eval()
    with torch.no_grad():
        evaluate(model, val_loader)
""",
        """\
import torch

def attack(model, loader):
    model.eval()
    for x, y in loader:
        x.requires_grad_(True)
        loss = criterion(model(x), y)
        grad, = torch.autograd.grad(loss, x)
""",
        """\
import torch
torch.set_grad_enabled(False)
model.eval()
for x in loader:
    print(model(x))
""",
        """\
import torch

def train(model, loader):
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.eval()
    for x, y in loader:
        out = model(x)
        apply_update(criterion(out, y))
""",
        """\
class TestModel:
    def test_eval_forward(self):
        model.eval()
        for x in batches:
            model(x)
""",
    )
    INVALID = (
        Invalid(
            """\
def validate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        logits = model(x)
        correct += (logits.argmax(-1) == y).sum().item()
    return correct / len(loader.dataset)
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
for epoch in range(epochs):
    model.train()
    for x, y in train_loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    for x, y in val_loader:
        val_loss = criterion(model(x), y)
""",
            line=10,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
def test(net, test_loader):
    predictions = []
    for images, _ in test_loader:
        predictions.append(net(images).argmax(dim=1))
    return predictions
""",
            line=4,
            severity=Severity.MEDIUM,
        ),
    )


def _frozen_by_call(call: cst.Call) -> str | None:
    """`model.requires_grad_(False)` (also `model.eval().requires_grad_(False)`): the module."""
    if method_name(call) != "requires_grad_" or type(call.func) is not cst.Attribute:
        return None
    values = [arg.value for arg in call.args]
    if len(values) != 1 or type(values[0]) is not cst.Name or values[0].value != "False":
        return None
    return _module_named(call.func.value)


def _frozen_by_loop(loop: cst.For) -> str | None:
    """`for name, p in model.named_parameters(): p.requires_grad = False`: the module."""
    iterated = loop.iter
    if type(iterated) is not cst.Call or method_name(iterated) not in ("parameters", "named_parameters"):
        return None
    targets = {n.value for n in (loop.target, *iter_descendants(loop.target)) if type(n) is cst.Name}
    for node in iter_descendants(loop.body):
        if type(node) is not cst.Assign or type(node.value) is not cst.Name or node.value.value != "False":
            continue
        for target in node.targets:
            assigned = target.target
            if (
                type(assigned) is cst.Attribute and assigned.attr.value == "requires_grad"
                and type(assigned.value) is cst.Name and assigned.value.value in targets
            ):
                return _module_named(iterated.func.value)
    return None


def _module_named(node: cst.BaseExpression) -> str | None:
    """The module a chain of its own methods starts from: `model` in `model.eval()`."""
    while type(node) is cst.Call and type(node.func) is cst.Attribute:
        node = node.func.value
    return dotted_name(node)


def _module_called(call: cst.Call) -> str | None:
    """`model` in `model(x)` and `model.forward(x)`."""
    name = dotted_name(call.func)
    if name is None:
        return None
    if type(call.func) is cst.Attribute and call.func.attr.value == "forward":
        return name.rsplit(".", 1)[0]
    return name
