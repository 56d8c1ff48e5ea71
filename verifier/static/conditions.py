"""The branch a line runs under, and what it says about how often the line runs.

A finding's frequency premise ("this runs every step") holds only if nothing between the line
and the loop that makes it hot can skip it. An `if` whose test is run-constant configuration
(`if args.amp:`, `if scaler is not None:`, `if rank == 0:`) keeps the heat: the code runs every
step in the runs that configure it so, and the evidence names the setting. A test that reads what
the step computes (`if loss > 10:`, `if not should_log(step): return`) or an `except` handler
makes the frequency unknown: the line may run every step or never. Rate limits, the update
cadence of gradient accumulation and cache fills are told apart with the guards' own tests.

Tracked in walk order per function: the body and `else` of an `if`, the rest of a block after an
`if` that leaves it (`continue`, `return`, `break`, `raise`), and `except` handlers. A test is
run-constant when every name it reads is configuration (`args`, `cfg`, `self.<setting>`, module
constants) or is bound only from run-constant values where it is bound, and every call in it is a
pure predicate (`isinstance`, `torch.cuda.is_available()`, `dist.get_rank()`). A parameter of a
function outside any loop varies with its callers, unless it is named as a switch (`use_amp`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from verifier.static.caller_branches import decided_form, encode, names_in, parameter_facts, without
from verifier.static.config_lookups import ConfiguredDefaults
from verifier.static.guards import Guards, training_mode_test
from verifier.static.heat import Condition, ConditionKind
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.local_names import names_bound_before
from verifier.static.names import CONFIG_ROOTS, dotted_name
from verifier.static.statement_bindings import statement_bindings
from verifier.static.suites import SuiteVisits
from verifier.static.tracker import Tracker
from verifier.static.walk import children, ends_with

# Parameters named as switches: a caller passes the run's setting, not a per-step value.
_SWITCH = re.compile(r"^(use|enable|disable|with|no|do)_|_enabled$|^(amp|fp16|bf16|compile|distributed|debug)$")
# Attributes that change with every step even when the loop's function does not assign them.
_STEPPING = re.compile(r"step|iter|batch_idx|counter|^_?i$", re.IGNORECASE)
_PURE_BUILTINS = frozenset({"isinstance", "issubclass", "hasattr", "getattr", "len", "callable", "type", "bool"})
_PURE_CALLS = frozenset(
    {
        "torch.cuda.is_available", "torch.backends.mps.is_available", "torch.distributed.is_initialized",
        "torch.distributed.is_available", "torch.distributed.get_rank", "torch.distributed.get_world_size",
        "torch.is_grad_enabled", "torch.is_autocast_enabled", "torch.cuda.device_count", "os.environ.get",
        "os.getenv", "os.path.exists", "os.path.isfile", "os.path.isdir",
    }
)
_PURE_METHODS = frozenset(
    {"is_available", "is_initialized", "get_rank", "get_world_size", "is_main_process", "is_local_main_process",
     "is_global_zero", "startswith", "endswith", "get"}
)
_EXITS = (cst.Continue, cst.Return, cst.Break, cst.Raise)
_GUARD_KINDS = {
    "rate": ConditionKind.THROTTLE, "cadence": ConditionKind.CADENCE, "lazy": ConditionKind.ONCE, "eager": ConditionKind.DATA,
    "eval": ConditionKind.EVAL_MODE,
}
_STRUCTURE_CHECKS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "type"})


def _presence_check(comparison: cst.Comparison) -> bool:
    """`x is None` / `x is not None` (chained or not): a presence check, stable from step to step."""
    return all(
        type(c.operator) in (cst.Is, cst.IsNot) and type(c.comparator) is cst.Name and c.comparator.value == "None"
        for c in comparison.comparisons
    )


@dataclass(eq=False)
class _Frame:
    """One function (or the module): per block being walked, innermost last, the weakest branch
    around it so far (the block's own, an earlier `if ...: continue` in it, or an outer one's)."""

    node: cst.CSTNode
    params: frozenset[str] = frozenset()
    weakest: list[Condition | None] = field(default_factory=list)
    loops: list[cst.CSTNode] = field(default_factory=list)

    def push(self, condition: Condition | None) -> None:
        self.weakest.append(_weaker(self.weakest[-1] if self.weakest else None, condition))

    def narrow(self, condition: Condition) -> None:
        """The rest of the innermost block runs only under `condition` too."""
        self.weakest[-1] = _weaker(self.weakest[-1], condition)


def _weaker(outer: Condition | None, inner: Condition | None) -> Condition | None:
    """The branch that says least about how often code runs; the inner one on a tie (it names
    the test closest to the line)."""
    if outer is None or (inner is not None and inner.kind.value >= outer.kind.value):
        return inner if inner is not None else outer
    return outer


class Conditions(SuiteVisits, LambdaScopes, Tracker):
    """Which branch the walk is in; `current()` is what the engine and rules capture."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frames: list[_Frame] = [_Frame(context.module)]
        # Block id -> the condition that opening it starts (an `if` body, `else`, `except`); an
        # `elif` (an `If` node) opens its region for the whole of it, its own test included.
        self._opens: dict[int, Condition | _Lazy | None] = {}
        self._bindings: dict[int, dict[str, list[cst.BaseExpression | None]]] = {}
        self._kinds: dict[int, ConditionKind] = {}
        # The classes around the walk, innermost last: `self.<switch>` is read as its class's.
        self._classes: list[str] = []
        self._class_nodes: list[cst.ClassDef] = []
        # Settings looked up in a configuration with a literal default (`get_conf(key, False)`).
        self._configured = ConfiguredDefaults()
        # Rate limits, cadences and cache fills are the guards' verdicts, decided once per `if`.
        self._guards = context.tracker(Guards)

    # ----- what is asked -----

    def current(self) -> Condition | None:
        """The weakest branch around the walk in this function; a run-constant one is returned
        too (the evidence names it), None when the line is not in a branch."""
        weakest = self._frames[-1].weakest
        return weakest[-1] if weakest else None

    # ----- walk -----

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node.name.value)
        self._class_nodes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()
        self._class_nodes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = frozenset(
            p.name.value for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params)
        )
        self._frames.append(_Frame(node, params))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    def visit_For(self, node: cst.For) -> None:
        self._frames[-1].loops.append(node)

    def leave_For(self, node: cst.For) -> None:
        self._frames[-1].loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self._frames[-1].loops.append(node)

    def leave_While(self, node: cst.While) -> None:
        self._frames[-1].loops.pop()

    def visit_If(self, node: cst.If) -> None:
        if id(node) in self._opens:
            self._open(node)
        self._opens[id(node.body)] = _Lazy(self, node, "body")
        orelse = node.orelse
        if type(orelse) is cst.Else:
            self._opens[id(orelse.body)] = _Lazy(self, node, "else")
        elif type(orelse) is cst.If:
            # `elif`: it runs when the first test failed (its own test then opens its body).
            self._opens[id(orelse)] = _Lazy(self, node, "else")

    def leave_If(self, node: cst.If) -> None:
        self._opens.pop(id(node.body), None)
        if node.orelse is not None:
            self._opens.pop(id(node.orelse.body if type(node.orelse) is cst.Else else node.orelse), None)
        frame = self._frames[-1]
        # `if not should_log: return` / `if bad: continue`: the rest of the block runs when it fails.
        if node.orelse is None and frame.weakest and _leaves(node.body):
            condition = self._classify(node, "rest")
            if condition is not None:
                frame.narrow(condition)
        if id(node) in self._opens:
            self._close(node)
            del self._opens[id(node)]

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._opens[id(node.body)] = Condition(ConditionKind.DATA, node, described="an exception is raised")

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._opens.pop(id(node.body), None)

    def open_suite(self, body: cst.BaseSuite) -> None:
        self._open(body)

    def close_suite(self, body: cst.BaseSuite) -> None:
        self._close(body)

    def _open(self, body: cst.CSTNode) -> None:
        opened = self._opens.get(id(body))
        if type(opened) is _Lazy:
            opened = opened.resolve()
        self._frames[-1].push(opened)

    def _close(self, body: cst.CSTNode) -> None:
        self._frames[-1].weakest.pop()

    # ----- classification -----

    def _classify(self, node: cst.If, branch: str) -> Condition | None:
        """The kind of the branch of `node` the walk enters: its `body`, its `else`, or the
        `rest` of the block after it (when its body leaves the block)."""
        kind = self._kinds.get(id(node))
        if kind is None:
            kind = self._kinds[id(node)] = self._kind_of(node)
        if branch == "rest" and _ends_the_loop(node.body):
            return None  # `if it >= max_iters: break`: the loop's end, every iteration before it runs
        if branch == "body" and self._guards.holds_every_step(node.test):
            # `if it % log_interval == 0:` with `log_interval = 1` (or an option's default of 1):
            # true on every iteration of the run, as a run-constant setting that holds.
            return Condition(ConditionKind.CONSTANT, node.test)
        if kind is ConditionKind.EVAL_MODE and branch != "body":
            kind = ConditionKind.CONSTANT  # the other side of `if not self.training:` runs in training
        elif branch != "body" and training_mode_test(node.test) is True:
            kind = ConditionKind.EVAL_MODE  # the `else` of `if self.training:`, or the rest after its return
        if kind is ConditionKind.THROTTLE and branch == "else":
            return None  # the `else` of a rate limit runs on the other steps: as often as the loop
        if kind is ConditionKind.ONCE and branch != "body":
            kind = self._test_kind(node.test)
        if kind is ConditionKind.DATA and branch == "rest":
            kind = ConditionKind.EXIT  # the step goes on unless the early exit was taken
        if kind in (ConditionKind.CONSTANT, ConditionKind.DATA):
            callers = self._callers_decide(node, branch, kind)
            if self._off_by_default(node.test, branch) or callers is (branch != "body"):
                # `if rank == 0 and args.find_lr:`: a part the defaults hold false keeps the branch
                # off, whatever the data says of the other part. So does a test every caller's
                # arguments decide against the branch (`if x_mask is None:` where every call
                # passes a mask).
                kind = ConditionKind.OPT_IN
            elif callers is not None and kind is ConditionKind.DATA:
                kind = ConditionKind.CONSTANT  # `if verbose:` where every call passes `verbose=True`
        return Condition(kind, node.test, negated=branch != "body")

    def _off_by_default(self, test: cst.BaseExpression, branch: str) -> bool:
        """Whether the command line's defaults (and the switches of the class the test is in,
        as its constructor leaves them), or else the defaults the settings it reads are looked up
        with in a configuration (`config_lookups`), keep the walk out of `branch` of this test."""
        command_line = self.context.command_line()
        held = None
        if command_line is not None:
            held = command_line.holds_by_default(test, self._classes[-1] if self._classes else None)
        if held is None:
            function = self._frames[-1].node
            held = self._configured.holds(
                test, function if type(function) is cst.FunctionDef else None,
                self._class_nodes[-1] if self._class_nodes else None,
            )
        if held is None:
            return False
        return held is (branch != "body")

    def _callers_decide(self, node: cst.If, branch: str, kind: ConditionKind) -> bool | None:
        """The test of `node` as every call the project makes of the function being walked
        decides it (`caller_branches.py`), None when they do not. The first walk of a file knows
        no callers: it records the question, and the project pass analyses the file again only
        when the callers' arguments answer it otherwise than the walk read it."""
        frame = self._frames[-1]
        form = encode(node.test)
        tested = [name for name in names_in(form) if name in frame.params]
        if not tested:
            return None
        function = self.context.heat.where().function
        if function is None or function.node is not frame.node:
            return None
        # A parameter bound again before the test (anywhere in the function, when a loop may
        # bring the walk back to it) is not what its callers passed.
        if frame.loops:
            bound_here = statement_bindings(self.context, frame.node)
        else:
            bound_here = names_bound_before(frame.node, node)
        if all(name in bound_here for name in tested):
            return None
        kept = without(form, bound_here)
        if not function.bound:
            self.context.heat.asked_branches.add((function.key, kept, branch, kind is ConditionKind.DATA))
            return None
        return decided_form(kept, parameter_facts(function.bound, frame.params))

    def _kind_of(self, node: cst.If) -> ConditionKind:
        """What the test of `node` says, once per `if` (its body and its `else` both ask). `if
        step % N == 0:` limits its body, `if step % N: continue` the rest of the block."""
        guard = self._guards.guard_kind(node)
        if guard is not None:
            return _GUARD_KINDS[guard]
        return self._test_kind(node.test)

    def _test_kind(self, test: cst.BaseExpression) -> ConditionKind:
        return ConditionKind.CONSTANT if self._run_constant(test, set()) else ConditionKind.DATA

    def _run_constant(self, test: cst.BaseExpression, seen: set[str]) -> bool:
        frame = self._frames[-1]
        pending: list[cst.CSTNode] = [test]
        while pending:
            part = pending.pop()
            kind = type(part)
            if kind is cst.Name or kind is cst.Attribute:
                if dotted_name(part) is not None:
                    # `self.use_fp16` is judged whole; its `self` is not a value of its own.
                    if not self._constant_name(part, frame, seen):
                        return False
                    continue
            elif kind is cst.Call:
                if not self._pure_call(part):
                    return False
                if (dotted_name(part.func) or "") in _STRUCTURE_CHECKS:
                    continue  # `isinstance(p, Linear)`: what a value is, not what it holds
            elif kind is cst.Comparison and _presence_check(part):
                continue  # `p.grad is not None`: whether a value is there, not what it holds
            pending.extend(children(part))
        return True

    def _pure_call(self, call: cst.Call) -> bool:
        name = dotted_name(call.func) or ""
        if name in _PURE_BUILTINS or _AVAILABILITY_PROBE.match(name.rsplit(".", 1)[-1]) and (
            "." not in name or name.endswith("cuda.is_available")
        ):
            return True
        if (self.context.imports.call_name(call) or "") in _PURE_CALLS:
            return True
        return type(call.func) is cst.Attribute and call.func.attr.value in _PURE_METHODS

    def _constant_name(self, node: cst.Name | cst.Attribute, frame: _Frame, seen: set[str]) -> bool:
        name = dotted_name(node)
        if name is None:
            return True  # `f().x`, `a[i].b`: the parts are judged on their own
        root = name.split(".", 1)[0]
        if _DEVICE_PROPERTIES.intersection(name.split(".")[1:]):
            return True  # `x.is_cuda`, `t.device.type`: where a value lives is fixed for the run
        if root in CONFIG_ROOTS or (root == "self" and name.split(".")[1:2] and name.split(".")[1] in CONFIG_ROOTS):
            return True
        if name in seen or root in ("None", "True", "False"):
            return True
        if root == "self" and "." in name:
            attribute = name.rsplit(".", 1)[-1]
            return not _STEPPING.search(attribute) and name not in self._bound_in(frame)
        bound = self._bound_in(frame)
        if name in bound:
            seen.add(name)
            return all(value is not None and self._run_constant(value, seen) for value in bound[name])
        if root in bound:
            return False
        if root in frame.params and not frame.loops:
            return bool(_SWITCH.search(root))
        return True

    def _bound_in(self, frame: _Frame) -> dict[str, list[cst.BaseExpression | None]]:
        """Names bound inside the innermost loop of the frame (its iterations change them), or in
        the function when no loop encloses the walk: name -> the values bound to it (None for a
        loop target or anything not a plain assignment). One pass over each function."""
        scope = frame.loops[-1] if frame.loops else frame.node
        found = self._bindings.get(id(scope))
        if found is None:
            everything = statement_bindings(self.context, frame.node)
            found = self._bindings[id(scope)] = {
                name: [value for value, loops in bound if scope is frame.node or id(scope) in loops]
                for name, bound in everything.items()
            }
            found = {name: values for name, values in found.items() if values}
        return found


# `torch.cuda.is_available()`, `is_torch_cuda_available()`: the CUDA machine the code is meant
# for, fixed for the run. Probes for other platforms (XPU, MPS) stay data: on the intended machine
# their branch does not run.
_AVAILABILITY_PROBE = re.compile(r"^is_(torch_)?(cuda_)?available$")
_DEVICE_PROPERTIES = frozenset({"is_cuda", "is_cpu", "is_mps", "is_xpu", "device"})


class _Lazy:
    """A branch classified only when the walk enters it (most `if`s hold no finding or call)."""

    __slots__ = ("_owner", "_node", "_branch")

    def __init__(self, owner: Conditions, node: cst.If, branch: str) -> None:
        self._owner, self._node, self._branch = owner, node, branch

    def resolve(self) -> Condition | None:
        return self._owner._classify(self._node, self._branch)


def _ends_the_loop(body: cst.BaseSuite) -> bool:
    """The branch ends the loop (`break`) or the run (`raise`): what follows it runs on every
    iteration that comes before, unlike the iteration skipped by a `continue` or `return`."""
    return ends_with(body, (cst.Break, cst.Raise))


def _leaves(body: cst.BaseSuite) -> bool:
    """The branch ends by leaving the block (`continue`, `return`, `break`, `raise`)."""
    return ends_with(body, _EXITS)

