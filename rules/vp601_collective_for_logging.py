"""VP601 collective-for-logging: a collective every step for a number that is only logged."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.distributed import OBJECT_COLLECTIVES, collective_name, collective_output
from verifier.static.guards import GuardedRule
from verifier.static.heat import Condition, Where
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.logcalls import records_only
from verifier.static.names import ImportTable, method_name, receiver, terminal_name
from verifier.static.rule import Invalid

_READS = frozenset({"item", "tolist", "numpy", "cpu"})
_PYTHON_NUMBERS = frozenset({"float", "int", "bool", "round", "abs", "min", "max", "sum", "len"})
_TENSOR_MATHS = frozenset({"torch", "torch.nn.functional", "torch.linalg", "math"})
_HOST_READ_USES = frozenset({"read", "log", "control", "return-host"})
# How a use passes its value on: reading into Python keeps the purpose of the outer use.
_AFTER_READ = {"derive": "read", "log": "log", "control": "control", "return": "return-host", "read": "read"}


@dataclass(eq=False)
class _Collective:
    call: cst.Call
    where: Where
    guarded: bool
    how: str
    condition: Condition | None = None
    uses: set[str] = field(default_factory=set)


@dataclass(eq=False)
class _Scope:
    collectives: list[_Collective] = field(default_factory=list)
    # Names holding a collective's result: (collective, whether the value is on the host).
    tracked: dict[str, tuple[_Collective, bool]] = field(default_factory=dict)
    by_call: dict[int, _Collective] = field(default_factory=dict)


class CollectiveForLogging(LambdaScopes, GuardedRule):
    code = "VP601"
    name = "collective-for-logging"
    category = Category.DISTRIBUTED
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None, eval=None)
    cost = "a collective every rank waits on, for a value that is only logged"
    summary = (
        "Finds a collective (`dist.all_reduce`, `all_gather`, `all_gather_object`, `accelerator.gather`) "
        "that runs every step on a value that is then only read on the host: logged, printed, or used "
        "as a flag (also `accelerator.check_trigger()`, which reduces a stop flag and reads it)."
    )
    why = (
        "A collective is a rendezvous: every rank waits for the slowest, and reading the result back "
        "(`.item()`, `print`) also waits for all the work queued before it. For a metric that is only "
        "logged this buys a number nobody needs on every step; for a \"stop now?\" flag it turns every "
        "step into a cross-rank sync. Outside a log interval the cost is paid on every step."
    )
    example = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(ddp_model(x), y)
    loss.backward()
    optimizer.step()
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    print(f"step {step}: loss {loss.item():.4f}")
"""
    use_instead = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(ddp_model(x), y)
    loss.backward()
    optimizer.step()
    if step % log_every == 0:
        logged = loss.detach().clone()
        dist.all_reduce(logged, op=dist.ReduceOp.AVG)
        print(f"step {step}: loss {logged.item():.4f}")
"""
    fix = (
        "Reduce only under the log interval (`if step % log_every == 0:`), or log the local value of "
        "rank 0; decide stop flags without a per-step collective (a step budget known to every rank)."
    )
    tokens = ("all_reduce", "all_gather", "gather(", "reduce(", "gather_object", "gather_for_metrics", "check_trigger")
    references = (
        "https://pytorch.org/docs/stable/distributed.html#collective-functions",
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_Scope())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._flush(self._scopes.pop())

    def leave_Module(self, node: cst.Module) -> None:
        self._flush(self._scopes[-1])

    def visit_Call(self, node: cst.Call) -> None:
        how = collective_name(node, self.context.imports)
        if how is None:
            return
        scope = self._scopes[-1]
        collective = _Collective(node, self.context.heat.here(), self.guarded, how, self.context.condition_probe())
        if how == "check_trigger":
            collective.uses.add("control")  # it reads the reduced stop flag on the host itself
        scope.collectives.append(collective)
        scope.by_call[id(node)] = collective
        output = collective_output(node, how)
        if type(output) is cst.Name:
            scope.tracked[output.value] = (collective, how in OBJECT_COLLECTIVES)

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        scope = self._scopes[-1]
        if scope.collectives:
            for statement in node.body:
                self._statement(statement, scope)


    def visit_If(self, node: cst.If) -> None:
        self._test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._test(node.test)

    def visit_For(self, node: cst.For) -> None:
        scope = self._scopes[-1]
        if scope.tracked:
            _Uses(scope, self.context.imports).classify(node.iter, "other")

    def _test(self, test: cst.BaseExpression) -> None:
        scope = self._scopes[-1]
        if scope.tracked:
            _Uses(scope, self.context.imports).classify(test, "control")

    def _statement(self, statement: cst.BaseSmallStatement, scope: _Scope) -> None:
        uses = _Uses(scope, self.context.imports)
        kind = type(statement)
        if kind is cst.Assign or kind is cst.AnnAssign:
            if statement.value is None:
                return
            flows = uses.classify(statement.value, "derive")
            targets = [t.target for t in statement.targets] if kind is cst.Assign else [statement.target]
            for target in targets:
                if type(target) is cst.Name:
                    _bind(scope, target.value, flows)
                elif type(target) in (cst.Tuple, cst.List):
                    for element in target.elements:
                        if type(element.value) is cst.Name:
                            scope.tracked.pop(element.value.value, None)
        elif kind is cst.AugAssign:
            flows = uses.classify(statement.value, "derive")
            target = statement.target
            if type(target) is cst.Name and target.value not in scope.tracked:
                _bind(scope, target.value, flows)
        elif kind is cst.Return:
            if statement.value is not None:
                uses.classify(statement.value, "return")
        elif kind is cst.Expr:
            if not _adds_to_tracked_container(statement.value, scope, uses):
                uses.classify(statement.value, "other")
        elif kind is cst.Assert:
            uses.classify(statement.test, "control")

    def _flush(self, scope: _Scope) -> None:
        # A function that reduces several values for its log (or for its stop flags) gets one
        # finding, at the first: one problem, one fix (reduce them together, at the log interval).
        by_purpose: dict[bool, list[_Collective]] = {}
        for collective in scope.collectives:
            uses = collective.uses
            if collective.guarded or "other" in uses or "return" in uses or not uses & _HOST_READ_USES:
                continue
            by_purpose.setdefault("control" in uses, []).append(collective)
        for flag, collectives in by_purpose.items():
            first = collectives[0]
            call = self.context.code_for(first.call.func)
            more = f" ({len(collectives) - 1} more in this function)" if len(collectives) > 1 else ""
            if flag:
                message = f"`{call}(...)` {{often}} reduces a flag that the host then reads: a cross-rank sync every step{more}"
            else:
                then = ", then the host reads it back" if first.uses & {"read", "return-host"} else ""
                message = (
                    f"`{call}(...)` {{often}} for a value that is only logged: every rank waits for the slowest{then}{more}"
                )
            self.report(first.call, message, where=first.where, condition=first.condition)

    VALID = (
        """\
import torch.distributed as dist
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % log_every == 0:
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        print(f"step {step}: loss {loss.item():.4f}")
""",
        """\
import torch.distributed as dist
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world_size
    optimizer.step()
""",
        """\
import torch.distributed as dist
for epoch in range(epochs):
    total = torch.zeros((), device="cuda")
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    dist.all_reduce(total)
    print(f"epoch {epoch}: {total.item() / len(loader):.4f}")
""",
        """\
import torch
import torch.distributed as dist
for x, y in loader:
    outputs = model(x)
    num_boxes = torch.as_tensor([float(len(y))], device="cuda")
    dist.all_reduce(num_boxes)
    num_boxes = torch.clamp(num_boxes / world_size, min=1).item()
    loss = criterion(outputs, y, num_boxes)
    loss.backward()
    optimizer.step()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.distributed as dist
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    print(f"step {step}: loss {loss.item():.4f}")
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch
import torch.distributed as dist
done = False
for step in range(max_steps):
    loss = model(*next_batch()).mean()
    loss.backward()
    optimizer.step()
    done = done or out_of_data()
    flag = torch.tensor(int(done), device="cuda")
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if flag.item():
        break
""",
            line=10,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch.distributed as dist
for step, batch in enumerate(loader):
    class_loss, kd_loss = model(batch)
    (class_loss + kd_loss).backward()
    optimizer.step()
    dist.all_reduce(class_loss)
    dist.all_reduce(kd_loss)
    logger.info("class %.3f kd %.3f", class_loss.item(), kd_loss.item())
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
for step, batch in enumerate(loader):
    loss = model(**batch).loss
    accelerator.backward(loss)
    optimizer.step()
    if stopper.should_stop(loss.item()):
        accelerator.set_trigger()
    if accelerator.check_trigger():
        break
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
from torch import distributed as dist
for step, batch in enumerate(loader):
    loss = model(batch).loss
    loss.backward()
    optimizer.step()
    gathered = [None] * world_size
    dist.all_gather_object(gathered, {"loss": loss.item()})
    logger.info("losses %s", gathered)
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import torch.distributed as dist
for step, batch in enumerate(loader):
    loss = model(batch).loss
    running = loss.detach()
    loss.backward()
    optimizer.step()
    dist.all_reduce(running)
    record = {"loss": running.item() / world_size}
    record.update(memory_stats())
    logger.log_dict(record, step=step)
""",
            line=7,
            severity=Severity.MEDIUM,
        ),
    )


_CONTAINER_ADDS = frozenset({"update", "append", "extend", "insert", "setdefault", "add"})


def _adds_to_tracked_container(value: cst.BaseExpression, scope: _Scope, uses: "_Uses") -> bool:
    """`log_dict.update({...})` / `row.append(x)` on a name holding a collective's result adds to
    that container: the container's later uses decide its purpose, as for `log_dict = {...}`."""
    if type(value) is not cst.Call or type(value.func) is not cst.Attribute:
        return False
    owner = value.func.value
    if type(owner) is not cst.Name or value.func.attr.value not in _CONTAINER_ADDS:
        return False
    held = scope.tracked.get(owner.value)
    flows = []
    for arg in value.args:
        flows = uses.classify(arg.value, "derive")
    if held is None and not flows:
        return False
    if held is not None:
        flows = [held, *flows]
    _bind(scope, owner.value, flows)
    return True


def _bind(scope: _Scope, name: str, flows: list[tuple[_Collective, bool]]) -> None:
    if flows:
        collective, host = flows[0]
        scope.tracked[name] = (collective, any(h for _, h in flows) or host)
    else:
        scope.tracked.pop(name, None)


class _Uses:
    """Classifies how one statement uses the tracked values: `log` (printed or recorded),
    `read` (into Python), `control` (a branch), `return`, `derive` (flows into another name),
    or `other` (fed to computation that may need it). Only run in scopes with a collective."""

    def __init__(self, scope: _Scope, imports: ImportTable) -> None:
        self.scope = scope
        self.imports = imports
        self.flows: list[tuple[_Collective, bool]] = []

    def classify(self, node: cst.CSTNode, context: str) -> list[tuple[_Collective, bool]]:
        self._visit(node, context)
        return self.flows

    def _use(self, collective: _Collective, context: str, host: bool) -> None:
        if context == "return" and host:
            context = "return-host"
        collective.uses.add(context)
        if context in ("derive", "read"):
            self.flows.append((collective, host or context == "read"))

    def _visit(self, node: cst.CSTNode, context: str) -> None:
        kind = type(node)
        if kind is cst.Name:
            found = self.scope.tracked.get(node.value)
            if found is not None:
                self._use(found[0], context, found[1])
            return
        if kind is cst.Attribute:
            self._visit(node.value, context)
            return
        if kind is cst.Call:
            self._call(node, context)
            return
        if kind is cst.FormattedString:
            for part in node.parts:
                if type(part) is cst.FormattedStringExpression:
                    self._visit(part.expression, "log")
            return
        if kind in (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp) and context not in (
            "log", "derive"
        ):
            context = "other"
        if kind is cst.BinaryOperation and type(node.operator) is cst.Modulo and type(node.left) in (
            cst.SimpleString, cst.ConcatenatedString
        ):
            context = "log"
        for child in node.children:
            self._visit(child, context)

    def _call(self, call: cst.Call, context: str) -> None:
        collective = self.scope.by_call.get(id(call))
        if collective is not None:
            # A collective that returns its result (`accelerator.gather(t)`) is a tracked value
            # here; one that writes into its argument is the collective itself.
            if collective_output(call, collective.how) is None:
                self._use(collective, context, collective.how in OBJECT_COLLECTIVES)
            return
        method = method_name(call)
        owner = receiver(call)
        func = terminal_name(call.func) or ""
        if method in _READS and owner is not None and not call.args:
            self._visit(owner, _AFTER_READ.get(context, "other"))
            return
        if type(call.func) is cst.Name and func in _PYTHON_NUMBERS:
            inner = _AFTER_READ.get(context, "other") if func in ("float", "int", "bool") else context
            for arg in call.args:
                self._visit(arg.value, inner)
            return
        namespace = (self.imports.call_name(call) or "").rpartition(".")[0]
        if namespace not in _TENSOR_MATHS and records_only(func):
            self._visit(call.func, "other")
            for arg in call.args:
                self._visit(arg.value, "log")
            return
        if owner is not None and type(owner) is not cst.Call and method and method.endswith("_"):
            # `t.div_(world_size)`: the tracked tensor is updated in place, not used.
            for arg in call.args:
                self._visit(arg.value, context)
            return
        if namespace in _TENSOR_MATHS or (method is not None and context != "other" and _is_value_method(method)):
            self._visit(call.func, context)
            for arg in call.args:
                self._visit(arg.value, context)
            return
        self._visit(call.func, "other")
        for arg in call.args:
            self._visit(arg.value, "other")


_VALUE_METHODS = frozenset(
    {"mean", "sum", "max", "min", "detach", "float", "double", "clone", "div", "mul", "sqrt", "exp",
     "log", "abs", "clamp", "squeeze", "flatten", "view", "reshape", "to", "tolist", "item", "cpu",
     "numpy", "values", "keys", "items", "get", "join", "format"}
)


def _is_value_method(method: str) -> bool:
    return method in _VALUE_METHODS
