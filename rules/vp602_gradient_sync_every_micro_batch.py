"""VP602 gradient-sync-every-micro-batch: DDP/FSDP all-reduce gradients on every accumulation step."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat, Status
from verifier.static.distributed import wrapper_kind
from verifier.static.guards import steps_an_optimizer
from verifier.static.heat import Where
from verifier.static.names import dotted_name, method_name
from verifier.static.rule import Invalid, Proof, Rule
from verifier.static.walk import children, iter_descendants

# Any of these in the function's code is one of the correct forms (or a wrapper around them):
# `model.no_sync()`, `model.require_backward_grad_sync = ...`, `fabric.no_backward_sync(model)`,
# `accelerator.accumulate(model)`, FSDP2's `model.set_requires_gradient_sync(False)`.
_SKIPS_SYNC = ("no_sync", "require_backward_grad_sync", "no_backward_sync", ".accumulate(", "set_requires_gradient_sync")
# DeepSpeed runs its own accumulation boundary behind `accelerator.backward` / `engine.backward`.
_OWN_ACCUMULATION = ("deepspeed",)
_FIX = {
    "DDP": "Wrap the micro-batches before the last in `with model.no_sync():` (or set `model.require_backward_grad_sync`).",
    "FSDP": "Wrap the micro-batches before the last in `with model.no_sync():`.",
    "FSDP2": "Call `model.set_requires_gradient_sync(False)` before the micro-batches and `True` before the last one.",
    "Accelerate": "Run each micro-batch under `with accelerator.accumulate(model):` and step unconditionally inside it.",
}


class GradientSyncEveryMicroBatch(Rule):
    code = "VP602"
    name = "gradient-sync-every-micro-batch"
    category = Category.DISTRIBUTED
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None, eval=None)
    cost = "a gradient all-reduce on every micro-batch instead of once per update"
    premises = (Premise.RULE,)
    summary = (
        "Finds gradient accumulation (backward on every micro-batch, an optimizer step only every N) on a "
        "model wrapped in DistributedDataParallel, FSDP or by Accelerate, without `no_sync()` / "
        "`require_backward_grad_sync` / `set_requires_gradient_sync(False)` / `accelerator.accumulate()`."
    )
    why = (
        "DDP all-reduces (FSDP reduce-scatters) the gradients during every backward. Under gradient "
        "accumulation only the sum after the last micro-batch is used, so with N micro-batches per step "
        "N-1 of the gradient collectives move the whole model's gradients over the interconnect for "
        "nothing. DDP overlaps them with the backward only in part: every micro-batch's backward ends "
        "waiting for its last gradient buckets."
    )
    example = """\
model = DDP(model, device_ids=[local_rank])
for step in range(max_steps):
    for micro_step in range(accum_steps):
        loss = model(*next_batch()) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
"""
    use_instead = """\
model = DDP(model, device_ids=[local_rank])
for step in range(max_steps):
    for micro_step in range(accum_steps):
        last = micro_step == accum_steps - 1
        with contextlib.nullcontext() if last else model.no_sync():
            loss = model(*next_batch()) / accum_steps
            loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
"""
    fix = _FIX["DDP"]
    tokens = ("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "fully_shard", "prepare(")
    references = (
        "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync",
        "https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
        "https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Where a model is wrapped: function key ("" at module level) -> the wrapper's kind.
        self._wrappers: dict[str, str] = {}
        self._backwards: list[tuple[cst.Call, Where, bool]] = []
        # Loops with an `if (i + 1) % accum == 0: optimizer.step()`: the flat accumulation form.
        self._cadence_loops: set[int] = set()
        self._cadence_ifs = 0
        self._cadences: dict[int, bool] = {}
        # Per cadence loop: the `N` of `step % N == 0`, the accumulation factor.
        self._factors: dict[int, cst.BaseExpression | None] = {}
        # Calls made in a loop, by callee key: where, and whether under an update cadence. A
        # backward in a function of its own (`train_step(batch)` per micro-batch) is judged at
        # the loop that calls it, as if it were written there.
        self._loop_calls: dict[str, list[tuple[Where, bool]]] = {}
        self._definitions: dict[str, list[cst.FunctionDef]] | None = None
        # Functions (by key) that step the optimizer under an update cadence outside any loop of
        # their own (`def train_step(...): ...; if step % accum == 0: optimizer.step()`): a loop
        # calling one accumulates as if the cadence were written in it. The factor, if shown.
        self._cadence_functions: dict[str, cst.BaseExpression | None] = {}

    def _is_cadence(self, node: cst.If) -> bool:
        known = self._cadences.get(id(node))
        if known is None:
            known = self._cadences[id(node)] = _has_modulo(node.test) and (
                steps_an_optimizer(node.body) or self._calls_a_stepping_function(node.body)
            )
        return known

    def _calls_a_stepping_function(self, body: cst.CSTNode) -> bool:
        """`if (i + 1) % accum == 0: update(optimizer)` where this module's `update` (or, for
        `self.update(...)`, a method of that name) steps it; `model.train()` is no call of a
        module function `train`."""
        if self._definitions is None:
            self._definitions = {}
            for statement in self.context.module.body:
                if type(statement) is cst.FunctionDef:
                    self._definitions.setdefault(statement.name.value, []).append(statement)
                elif type(statement) is cst.ClassDef:
                    for method in statement.body.body:
                        if type(method) is cst.FunctionDef:
                            self._definitions.setdefault(f"self.{method.name.value}", []).append(method)
        for node in iter_descendants(body):
            if type(node) is not cst.Call:
                continue
            name = node.func.value if type(node.func) is cst.Name else dotted_name(node.func)
            if name is not None and any(steps_an_optimizer(found.body) for found in self._definitions.get(name, ())):
                return True
            # Any function the heat model names: a method of an instance (`Updater().run(...)`) too.
            callee = self.context.heat.callee_key(node)
            if callee is not None and callee not in self._cadence_functions and (
                self._steps_outside_loops(callee) or self.context.heat.steps_elsewhere(callee)
            ):
                return True
        return False

    def _steps_outside_loops(self, key: str) -> bool:
        return any(function.steps for function in self.context.heat.functions_keyed(key))

    def visit_If(self, node: cst.If) -> None:
        cadence = self._is_cadence(node)
        self._cadence_ifs += cadence
        if cadence:
            where = self.context.heat.where()
            loop = where.innermost_loop
            if loop is not None:
                self._cadence_loops.add(id(loop))
                self._factors.setdefault(id(loop), _modulo_divisor(node.test))
            elif where.function is not None:
                self._cadence_functions.setdefault(where.function.key, _modulo_divisor(node.test))

    def leave_If(self, node: cst.If) -> None:
        self._cadence_ifs -= self._is_cadence(node)

    def visit_Call(self, node: cst.Call) -> None:
        kind = wrapper_kind(node, self.context.imports)
        if kind is not None:
            function = self.context.heat.where().function
            self._wrappers.setdefault(function.key if function is not None else "", kind)
        if method_name(node) == "backward" or self.context.imports.call_name(node) == "torch.autograd.backward":
            where = self.context.heat.here()
            if where.loops or where.function is not None:
                self._backwards.append((node, where, self._cadence_ifs > 0))
            return
        where = self.context.heat.where()
        if where.loops:
            callee = self.context.heat.callee_key(node)
            if callee is not None:
                self._loop_calls.setdefault(callee, []).append((where, self._cadence_ifs > 0))

    def leave_Module(self, node: cst.Module) -> None:
        if not self._wrappers or not self._backwards or self.context.mentions_in_code(*_OWN_ACCUMULATION):
            return
        for call, where, in_cadence in self._backwards:
            for at, under_cadence in self._loops_running(where, in_cadence):
                wrapper = self._wrapper_for(at) or self._wrapper_for(where)
                if wrapper is None or under_cadence or not self._accumulates(at):
                    continue
                if self._skips_sync(where) or self._skips_sync(at):
                    continue
                self.report(
                    call,
                    f"under gradient accumulation this backward synchronises the {wrapper} gradients on every "
                    "micro-batch; only the last one before the optimizer step needs to",
                    where=at,
                    fix=_FIX[wrapper],
                    evidence=(self._factor_premise(at),),
                )
                break

    def _loops_running(self, where: Where, in_cadence: bool) -> list[tuple[Where, bool]]:
        """Where the backward runs in a loop: its own loops, else each loop of this module that
        calls its function (and whether that call is under an update cadence)."""
        if where.loops:
            return [(where, in_cadence)]
        function = where.function
        if function is None or in_cadence:
            return []
        return [(at, cadence) for at, cadence in self._loop_calls.get(function.key, ())]

    def _factor_premise(self, where: Where) -> Proof:
        """The rule's premise: the accumulation factor can exceed 1. A literal shows it; a setting
        (a parameter, `args.accum`) leaves it assumed; a name bound to 1 and raised only under a
        condition (`accum = 1; if batch_size > MAX: accum = ...`) leaves it unknown."""
        inner = where.loops[-1]
        called = self._cadence_function_called(inner)
        if id(inner) in self._cadence_loops:
            factor = self._factors.get(id(inner))
        elif called is not None:
            factor = self._cadence_functions[called]
        else:
            factor = _range_bound(inner.node)
        if factor is None:
            return Proof.assumed(Premise.RULE, "the accumulation factor is not shown: it may be 1")
        shown = self.context.code_for(factor)
        if type(factor) is cst.Integer:
            value = int(factor.value, 0)
            status = Status.PROVEN if value > 1 else Status.UNKNOWN
            return Proof(Premise.RULE, status, f"the accumulation factor is {value}", factor)
        function = where.function.node if where.function is not None else None
        values = _values_bound(dotted_name(factor), function if function is not None else self.context.module)
        if values and any(_is_one(value) for value, _ in values) and all(
            _is_one(value) or conditional for value, conditional in values
        ):
            return Proof.unknown(
                Premise.RULE, f"`{shown}` is 1 unless a condition raises it: the default run does not accumulate", factor
            )
        command_line = self.context.command_line()
        if command_line is not None and command_line.is_by_default(factor, 1):
            # `--accumulation_steps` with `default=1`: a user may raise it; the run as shipped does not.
            return Proof.unknown(
                Premise.RULE, f"`{shown}` defaults to 1: the default run does not accumulate", factor
            )
        return Proof.assumed(Premise.RULE, f"the accumulation factor `{shown}` comes from the run's settings", factor)

    def _wrapper_for(self, where: Where) -> str | None:
        """The model is wrapped in the backward's own function, in a method of the same class
        (`self.ddp_model = DDP(...)` in `__init__`), or at module level."""
        if where.function is None:
            return self._wrappers.get("")
        key = where.function.key
        found = self._wrappers.get(key)
        if found is None and "self" in where.function.params:
            owner = key.rsplit(".", 1)[0] + "."
            found = next((kind for where_key, kind in self._wrappers.items() if where_key.startswith(owner)), None)
        return found or self._wrappers.get("")

    def _skips_sync(self, where: Where) -> bool:
        """One of the correct forms in the backward's own function (or module, outside functions)."""
        function = where.function
        if function is None or function.node is None:
            return self.context.mentions_in_code(*_SKIPS_SYNC)
        code = self.context.code_without_comments(function.node)
        return any(token in code for token in _SKIPS_SYNC)

    def _accumulates(self, where: Where) -> bool:
        """The optimizer steps in a loop around the backward's loop (a micro-batch loop), or on
        an `i % accum` cadence inside the same loop; here or in a function of this module the
        loop calls."""
        inner = where.loops[-1]
        if id(inner) in self._cadence_loops or self._cadence_function_called(inner) is not None:
            return True
        if inner.steps_here or self._calls_a_stepping_function(inner.node):
            return False
        if any(loop.steps_here or self._calls_a_stepping_function(loop.node) for loop in where.loops[:-1]):
            return True
        # The micro-batch loop is the function's own and the function steps once per call, after
        # it (`def train_step(): for _ in range(accum): ...backward(); optimizer.step()`).
        return where.function is not None and where.function.steps and where.function.key not in self._cadence_functions

    def _cadence_function_called(self, loop) -> str | None:
        """The key of a function the loop calls whose optimizer step is under an update cadence."""
        return next(
            (
                key for key, sites in self._loop_calls.items()
                if key in self._cadence_functions and any(at.innermost_loop is loop for at, _ in sites)
            ),
            None,
        )

    VALID = (
        """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank])
for step in range(max_steps):
    for micro_step in range(accum_steps):
        model.require_backward_grad_sync = micro_step == accum_steps - 1
        loss = model(*get_batch()) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
""",
        """\
import contextlib
from torch.nn.parallel import DistributedDataParallel

model = DistributedDataParallel(model, device_ids=[rank])
for i, (x, y) in enumerate(loader):
    context = model.no_sync() if (i + 1) % accum_steps else contextlib.nullcontext()
    with context:
        (criterion(model(x), y) / accum_steps).backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(**batch).loss)
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
from torch.distributed.fsdp import fully_shard

fully_shard(model)
for step in range(max_steps):
    for micro_step in range(accum_steps):
        model.set_requires_gradient_sync(micro_step == accum_steps - 1)
        model(next_batch()).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
""",
        """\
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank])
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
""",
        """\
for step in range(max_steps):
    for micro_step in range(accum_steps):
        (model(*get_batch()) / accum_steps).backward()
    optimizer.step()
    optimizer.zero_grad()
""",
        """\
model = fabric.setup(model)
for i, batch in enumerate(loader):
    with fabric.no_backward_sync(model, enabled=(i + 1) % accum != 0):
        fabric.backward(model(batch).sum())
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid(
            """\
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank])
for step in range(max_steps):
    for micro_step in range(accum_steps):
        loss = model(*get_batch()) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch

model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x.cuda()), y.cuda()) / accum_steps
    scaler.scale(loss).backward()
    if (i + 1) % accum_steps == 0:
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
from torch.distributed.fsdp import fully_shard

for layer in model.layers:
    fully_shard(layer)
fully_shard(model)
for step in range(max_steps):
    for micro_step in range(accum_steps):
        model(next_batch()).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
""",
            line=8,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for step, batch in enumerate(loader):
    loss = model(**batch).loss / accum_steps
    accelerator.backward(loss)
    if step % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
            line=4,
            severity=Severity.MEDIUM,
        ),
    )


def _modulo_divisor(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """The `N` of `(step + 1) % N == 0`."""
    for node in (test, *iter_descendants(test)):
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
            return node.right
    return None


def _range_bound(loop: cst.CSTNode | None) -> cst.BaseExpression | None:
    """The `N` of a micro-batch loop `for micro in range(N)`."""
    if type(loop) is not cst.For or type(loop.iter) is not cst.Call or dotted_name(loop.iter.func) != "range":
        return None
    arguments = [arg.value for arg in loop.iter.args]
    return arguments[0] if len(arguments) == 1 else arguments[1] if len(arguments) >= 2 else None


def _values_bound(name: str | None, scope: cst.CSTNode) -> list[tuple[cst.BaseExpression, bool]]:
    """Every value `name` is bound to in `scope` (assignments and a parameter's default), each
    with whether an `if` decides it."""
    if name is None:
        return []
    found: list[tuple[cst.BaseExpression, bool]] = []
    if type(scope) is cst.FunctionDef:
        for param in (*scope.params.params, *scope.params.kwonly_params):
            if param.name.value == name and param.default is not None:
                found.append((param.default, False))
    pending: list[tuple[cst.CSTNode, bool]] = [(scope, False)]
    while pending:
        node, conditional = pending.pop()
        if type(node) is cst.Assign and any(dotted_name(t.target) == name for t in node.targets):
            found.append((node.value, conditional))
        for child in children(node):
            pending.append((child, conditional or type(node) is cst.If))
    return found


def _is_one(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Integer and node.value == "1"


def _has_modulo(test: cst.BaseExpression) -> bool:
    """`(i + 1) % accum == 0`: a test with a cadence in it."""
    return any(type(n) is cst.BinaryOperation and type(n.operator) is cst.Modulo for n in (test, *iter_descendants(test)))
