"""GradScaler facts shared by the AMP rules (VP301-VP305) and the sync rule (VP201)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from verifier.findings import Premise
from verifier.static.facts import Kind
from verifier.static.heat import Condition, Where
from verifier.static.names import dotted_name, method_name, receiver, terminal_name
from verifier.static.rule import Proof, Rule
from verifier.static.tracker import Tracker
from verifier.static.walk import iter_descendants

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext
    from verifier.static.facts import NameFacts
    from verifier.static.names import ImportTable

SCALER_METHODS = frozenset({"scale", "step", "update", "unscale_"})
_FINITENESS_FUNCTIONS = frozenset(
    {"torch.isfinite", "torch.isnan", "torch.isinf", "math.isfinite", "math.isnan", "math.isinf"}
)
_FINITENESS_METHODS = frozenset({"isfinite", "isnan", "isinf"})
# What skips the rest of a step: the scaler.step after it does not run this time.
_SKIPS = (cst.Continue, cst.Return)


def scaler_method(call: cst.Call, facts: NameFacts) -> str | None:
    """`step` for `scaler.step(opt)` when the receiver is a GradScaler, else None."""
    method = method_name(call)
    if method in SCALER_METHODS and facts.is_scaler(receiver(call)):
        return method
    return None


def has_finiteness_check(node: cst.CSTNode, imports: ImportTable) -> bool:
    """True when `node` calls torch/math isfinite/isnan/isinf (as a function or a method)."""
    candidates = [node, *iter_descendants(node)]
    for child in candidates:
        if type(child) is cst.Call:
            if imports.call_name(child) in _FINITENESS_FUNCTIONS or method_name(child) in _FINITENESS_METHODS:
                return True
    return False


def calls_scaler_step(node: cst.CSTNode, facts: NameFacts) -> bool:
    return any(
        type(child) is cst.Call and scaler_method(child, facts) == "step"
        for child in iter_descendants(node)
    )


def is_finite_guard(node: cst.If, context: ModuleContext) -> bool:
    """An `if` that tests finiteness and so decides whether `scaler.step` runs.

    Either the step is inside the guarded branch, or the branch skips a `scaler.step` that
    comes after it (`continue`, or `return` from the function that steps). A branch that only
    raises or breaks stops the run or a search on divergence, which the scaler never does; one
    after the step decides nothing about it.
    """
    if not context.mentions("isfinite", "isnan", "isinf") or not has_finiteness_check(node.test, context.imports):
        return False
    if calls_scaler_step(node, context.facts):
        return True
    if not any(isinstance(child, _SKIPS) for child in iter_descendants(node.body)):
        return False
    function = context.heat.where().function
    scope = function.node if function is not None else context.module
    return _steps_after(node, scope, context.facts)


def _steps_after(node: cst.CSTNode, scope: cst.CSTNode, facts: NameFacts) -> bool:
    """A `scaler.step(...)` call in `scope` after `node` in source order."""
    seen = False
    for child in iter_descendants(scope):
        if child is node:
            seen = True
        elif seen and type(child) is cst.Call and scaler_method(child, facts) == "step":
            return True
    return False


def _scaler_free_ids(node: cst.If, facts: NameFacts) -> frozenset[int]:
    branch = scaler_free_branch(node, facts)
    return frozenset(id(n) for n in iter_descendants(branch)) if branch is not None else frozenset()


def uses_scaler(node: cst.CSTNode, facts: NameFacts) -> bool:
    return any(
        type(child) is cst.Call and scaler_method(child, facts) is not None
        for child in (node, *iter_descendants(node))
    )


def scaler_free_branch(node: cst.If, facts: NameFacts) -> cst.CSTNode | None:
    """The branch of an `if scaler: ... else: ...` that deliberately trains without the scaler.

    `if use_amp: scaler.scale(loss).backward() else: loss.backward()` is correct code: calls in
    the scaler-free branch never run together with the scaler, so AMP rules leave them alone.
    """
    absent = _scaler_absent_branch(node, facts)
    if absent is not None:
        return absent
    if node.orelse is None:
        return None
    body_uses, else_uses = uses_scaler(node.body, facts), uses_scaler(node.orelse, facts)
    if body_uses and not else_uses:
        return node.orelse
    if else_uses and not body_uses:
        return node.body
    return None


def _scaler_absent_branch(node: cst.If, facts: NameFacts) -> cst.CSTNode | None:
    """`if self._scaler is not None: <scaled backward, maybe in a helper> else: loss.backward()`:
    the branch the test shows runs with no scaler at all (`is None`, `not scaler`, or the `else` of
    `is not None` / `if scaler:`), whatever the other branch does."""
    test, absent_in_body = node.test, False
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, absent_in_body = test.expression, True
    elif type(test) is cst.Comparison and len(test.comparisons) == 1 and _is_none(test.comparisons[0].comparator):
        operator = type(test.comparisons[0].operator)
        if operator not in (cst.Is, cst.IsNot):
            return None
        test, absent_in_body = test.left, operator is cst.Is
    if type(test) not in (cst.Name, cst.Attribute) or not facts.is_scaler(test):
        return None
    return node.body if absent_in_body else node.orelse


def _is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"


@dataclass(eq=False)
class ScalerCall:
    method: str
    scaler: str
    call: cst.Call
    where: Where
    # The receiver is known to be a GradScaler (made by `GradScaler(...)`), not only named like one.
    constructed: bool = False


@dataclass(eq=False)
class AmpScope:
    """What one training scope (a function, or the module) does with its GradScaler and optimizers."""

    node: cst.CSTNode
    scaler_calls: list[ScalerCall] = field(default_factory=list)
    optimizer_steps: list[tuple[cst.Call, Where]] = field(default_factory=list)
    backwards: list[tuple[cst.Call, Where, bool]] = field(default_factory=list)
    clips: list[tuple[cst.Call, Where, bool, Condition | None]] = field(default_factory=list)
    # The calls made before each clip (`Clip.before`) and whether this scope itself calls
    # `scaler.unscale_` (shared calls of a class's methods aside): for "through calls".
    calls: list[cst.Call] = field(default_factory=list)
    clip_calls: dict[int, int] = field(default_factory=dict)
    unscales_here: bool = False
    exempt: set[int] = field(default_factory=set)
    scaled_names: set[str] = field(default_factory=set)
    # Names this scope calls (`helper()`, `self.helper()`) and expressions it passes to calls.
    called_names: set[str] = field(default_factory=set)
    passed: set[str] = field(default_factory=set)

    @property
    def name(self) -> str | None:
        return self.node.name.value if type(self.node) is cst.FunctionDef else None

    def calls_of(self, method: str) -> list[ScalerCall]:
        return [c for c in self.scaler_calls if c.method == method]

    @property
    def scales_loss(self) -> bool:
        return bool(self.calls_of("scale"))

    @property
    def steps_with_scaler(self) -> bool:
        return bool(self.calls_of("step"))


_CLIPS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_grad_value"})


class AmpScopes(Tracker):
    """Each scope's GradScaler, optimizer, backward and clipping calls, in the order scopes close.

    A function closes at its end, except a method: Lightning-style code scales in one method
    and steps in another, so a class's methods close together when the class ends, each
    sharing the calls on a `self.` scaler. The module closes last.
    """

    def __init__(self, context: ModuleContext) -> None:
        super().__init__(context)
        self.closed: list[AmpScope] = []
        self._scopes: list[AmpScope] = [AmpScope(context.module)]
        # Per open class: its methods' scopes, closed together when the class ends.
        self._classes: list[list[AmpScope]] = []
        self._enclosing: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append([])
        self._enclosing.append("class")

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._enclosing.pop()
        methods = self._classes.pop()
        # Lightning-style code scales in one method and steps in another: calls on a
        # `self.` scaler are shared by every method of the class.
        shared = [c for m in methods for c in m.scaler_calls if c.scaler.startswith("self.")]
        for method in methods:
            own = set(map(id, method.scaler_calls))
            method.scaler_calls.extend(c for c in shared if id(c) not in own)
            self.closed.append(method)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(AmpScope(node))
        self._enclosing.append("function")

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enclosing.pop()
        scope = self._scopes.pop()
        if self._enclosing and self._enclosing[-1] == "class":
            self._classes[-1].append(scope)
        else:
            self.closed.append(scope)

    def leave_Module(self, node: cst.Module) -> None:
        self.closed.append(self._scopes.pop())

    def visit_If(self, node: cst.If) -> None:
        self._scopes[-1].exempt.update(_scaler_free_ids(node, self.context.facts))

    def leave_Assign(self, node: cst.Assign) -> None:
        if type(node.value) is cst.Call and scaler_method(node.value, self.context.facts) == "scale":
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    self._scopes[-1].scaled_names.add(name)

    def visit_Call(self, node: cst.Call) -> None:
        scope = self._scopes[-1]
        facts = self.context.facts
        where = self.context.heat.here()
        method = scaler_method(node, facts)
        if method is not None:
            owner = receiver(node)
            scope.scaler_calls.append(ScalerCall(
                method, self.context.code_for(owner), node, where, constructed=facts.kind_of(owner) is Kind.SCALER
            ))
            scope.unscales_here = scope.unscales_here or method == "unscale_"
            return
        scope.calls.append(node)
        callee = terminal_name(node.func)
        if callee is not None:
            scope.called_names.add(callee)
        scope.passed.update(code for arg in node.args if (code := dotted_name(arg.value)) is not None)
        name = method_name(node)
        if name == "step" and not node.args and facts.is_optimizer(receiver(node)):
            scope.optimizer_steps.append((node, where))
        elif name == "backward" or self.context.imports.call_name(node) == "torch.autograd.backward":
            scope.backwards.append((node, where, self._is_scaled(node, scope)))
        elif (name or terminal_name(node.func)) in _CLIPS:
            scope.clips.append((node, where, bool(scope.calls_of("unscale_")), self.context.condition_probe()))
            scope.clip_calls[id(node)] = len(scope.calls) - 1

    def _is_scaled(self, call: cst.Call, scope: AmpScope) -> bool:
        target = receiver(call) if method_name(call) == "backward" else (call.args[0].value if call.args else None)
        if target is None:
            return False
        for part in (target, *iter_descendants(target)):
            if type(part) is cst.Call and scaler_method(part, self.context.facts) == "scale":
                return True
            if dotted_name(part) in scope.scaled_names:
                return True
        return False


def unscaling_functions(scopes: list[AmpScope]) -> set[str]:
    """Names of this module's functions and methods that call `scaler.unscale_`, directly or
    through others of them (`self.unscale_gradients()` calls `self.scaler.unscale_(opt)`)."""
    calls = {scope.name: {terminal_name(call.func) for call in scope.calls} for scope in scopes if scope.name}
    found = {scope.name for scope in scopes if scope.name and scope.unscales_here}
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in found and called & found:
                found.add(name)
                changed = True
    return found


def scaler_proof(scope: AmpScope) -> Proof:
    """The value premise of the GradScaler rules: the object scaling the loss is a GradScaler,
    made by `GradScaler(...)` or used through its protocol here (`scale(loss)` with `step(optimizer)`
    or `update()`, or `step(optimizer)` with `update()`); a name and one call are only an assumption."""
    calls = scope.scaler_calls
    shown = next((call for call in calls if call.constructed), None)
    if shown is not None:
        return Proof.proven(Premise.VALUE, f"`{shown.scaler}` is made by `GradScaler(...)`")
    for name in dict.fromkeys(call.scaler for call in calls):
        methods = {call.method for call in calls if call.scaler == name}
        if ("scale" in methods and methods & {"step", "update"}) or {"step", "update"} <= methods:
            used = ", ".join(f"`{m}`" for m in sorted(methods))
            return Proof.proven(Premise.VALUE, f"`{name}` is used through the GradScaler protocol here ({used})")
    name = calls[0].scaler if calls else "the scaler"
    return Proof.assumed(Premise.VALUE, f"`{name}` is taken for a GradScaler by its name and one of its calls")


def calls_before_clip(scope: AmpScope, clip: cst.Call) -> list[cst.Call]:
    """The calls the scope makes before `clip`, in walk order."""
    return scope.calls[: scope.clip_calls.get(id(clip), 0)]


class AmpScopeRule(Rule):
    """Base for the GradScaler rules: checks every scope `AmpScopes` collected, once the module ends."""

    # A GradScaler is known by its constructor (`GradScaler(...)`) or a name like `scaler`.
    tokens = ("scaler", "Scaler", "SCALER")

    def __init__(self, context: ModuleContext) -> None:
        super().__init__(context)
        self._amp = context.tracker(AmpScopes)

    def check(self, scope: AmpScope) -> None:
        raise NotImplementedError

    def leave_Module(self, node: cst.Module) -> None:
        for scope in self._amp.closed:
            self.check(scope)
