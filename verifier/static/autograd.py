"""Autograd facts: where grad mode is off, and which names hold tensors that carry a graph.

Learned in walk order. Grad mode comes from `with torch.no_grad()/inference_mode()/
set_grad_enabled(...)`, grad-mode decorators, `torch.set_grad_enabled(False)` statements and
framework hooks that run without grad (Lightning's `validation_step`). A name carries a graph
when it was bound, with grad on, to a model forward, a criterion, or tensor math on such a
value; `.detach()`, `.item()`, `.data` and friends cut the graph. Anything else is unknown and
reported as no graph: rules built on this stay silent rather than guess.
"""

from __future__ import annotations

import builtins
import enum
from dataclasses import dataclass, field

import libcst as cst

from verifier.findings import Status
from verifier.static.facts import SETS_UP, Kind, NameFacts
from verifier.static.heat import is_model_name
from verifier.static.names import (
    ImportTable,
    dotted_name,
    element_pairs,
    is_false,
    is_true,
    keyword_arg,
    method_name,
    names_in,
    positional_arg,
    receiver,
    terminal_name,
)


class GradMode(enum.Enum):
    ENABLED = "enabled"
    DISABLED = "disabled"
    UNKNOWN = "unknown"


# Lightning runs these hooks under no_grad/inference_mode itself.
_HOOKS_WITHOUT_GRAD = frozenset({"validation_step", "test_step", "predict_step"})
_HOOK_PREFIXES_WITHOUT_GRAD = ("on_validation", "on_test", "on_predict", "validation_epoch", "test_epoch")

# Methods whose result is still part of the graph when their receiver is.
_GRAPH_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "norm", "abs", "std", "var", "float", "half", "bfloat16",
        "double", "clone", "exp", "log", "sqrt", "pow", "square", "to", "cuda", "cpu", "view",
        "view_as", "reshape", "reshape_as", "flatten", "squeeze", "unsqueeze", "softmax",
        "log_softmax", "sigmoid", "tanh", "relu", "prod", "cumsum", "contiguous", "t",
        "transpose", "permute", "masked_fill", "clamp", "add", "sub", "mul", "div", "matmul",
        "type_as", "expand", "repeat", "gather", "index_select", "neg", "narrow", "select",
        "logsumexp", "nansum", "nanmean",
    }
)
_GRAPH_ATTRIBUTES = frozenset({"loss", "logits", "last_hidden_state", "pooler_output", "T", "mT", "real", "imag"})
# Torch functions whose result never requires grad (indices, booleans, fresh tensors, copies).
_NO_GRAPH_FUNCTIONS = frozenset(
    {
        "argmax", "argmin", "argsort", "eq", "ne", "lt", "gt", "le", "ge", "isnan", "isfinite",
        "isinf", "count_nonzero", "nonzero", "tensor", "zeros_like", "ones_like", "empty_like",
        "full_like", "rand_like", "randn_like", "randint_like", "equal", "allclose", "numel",
        "bucketize", "searchsorted", "unique",
    }
)
# Methods whose result never carries the graph of their receiver.
_GRAPH_CUTS = frozenset(
    {"detach", "item", "tolist", "numpy", "argmax", "argmin", "argsort", "long", "int", "bool", "size", "dim", "numel"}
)
_CONTAINER_FUNCTIONS = frozenset({"sum", "max", "min", "abs"})
_LOSS_CALLEE_SUFFIXES = ("loss_fn", "loss_func", "loss_function", "lossfn", "_loss", "criterion")
_BUILTINS = frozenset(dir(builtins))


def grad_mode_of(expr: cst.BaseExpression, imports: ImportTable) -> GradMode | None:
    """The grad mode a context manager or decorator sets; None when it is not a grad-mode one."""
    call = expr if type(expr) is cst.Call else None
    func = call.func if call is not None else expr
    name = imports.qualified_name(func) or dotted_name(func) or ""
    if not (name.startswith("torch.") or "." not in name):
        return None
    last = name.rsplit(".", 1)[-1]
    if last == "no_grad":
        return GradMode.DISABLED
    if last == "enable_grad":
        return GradMode.ENABLED
    if last == "inference_mode":
        flag = _first_argument(call, "mode")
        return GradMode.DISABLED if flag is None else _mode_from_flag(flag, enabled_when_true=False)
    if last == "set_grad_enabled" and call is not None:
        flag = _first_argument(call, "mode")
        return GradMode.UNKNOWN if flag is None else _mode_from_flag(flag, enabled_when_true=True)
    return None


def _grad_off_by_name(decorator: cst.BaseExpression) -> GradMode | None:
    """A project's own wrapper named for what it wraps (`@smart_inference_mode()`, `@no_grad_wrapper`
    from a utilities module): it runs the function without grad, as its name says."""
    func = decorator.func if type(decorator) is cst.Call else decorator
    name = (terminal_name(func) or "").lower()
    return GradMode.DISABLED if "inference_mode" in name or "no_grad" in name else None


def _first_argument(call: cst.Call | None, keyword: str) -> cst.BaseExpression | None:
    if call is None:
        return None
    arg = keyword_arg(call, keyword) or positional_arg(call, 0)
    return arg.value if arg is not None else None


def _mode_from_flag(flag: cst.BaseExpression, *, enabled_when_true: bool) -> GradMode:
    if is_true(flag):
        return GradMode.ENABLED if enabled_when_true else GradMode.DISABLED
    if is_false(flag):
        return GradMode.DISABLED if enabled_when_true else GradMode.ENABLED
    return GradMode.UNKNOWN


def is_loss_callee(name: str | None) -> bool:
    """`criterion`, `loss_fn`, `self.compute_loss`: callables that turn outputs into a loss."""
    if not name:
        return False
    lowered = name.lower().lstrip("_")
    if lowered.startswith(SETS_UP):
        return False  # `_setup_early_exit_loss()` builds one; it computes nothing
    if lowered in {"loss", "criterion"} or lowered.startswith("compute_loss"):
        return True
    return lowered.endswith(_LOSS_CALLEE_SUFFIXES)


# Decorators known to leave grad mode as it is; any other may wrap the function in `no_grad`
# (a project's `@smart_inference_mode()` returns `torch.inference_mode()(fn)`).
_GRAD_NEUTRAL_DECORATORS = frozenset(
    {"staticmethod", "classmethod", "property", "functools.wraps", "functools.cache", "functools.lru_cache",
     "functools.cached_property", "abc.abstractmethod", "typing.overload", "torch.compile", "torch.jit.script",
     "torch.jit.ignore", "torch.jit.unused", "dataclasses.dataclass", "contextlib.contextmanager"}
)


_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})


@dataclass(eq=False)
class BackwardReach:
    """What of one function (or the module) reaches a `backward()` in it, for the rules about
    retained graphs: a backward frees the saved activations of everything that flows into it.
    Recorded in walk order; read after the walk (`backed` is computed on the first ask)."""

    # `target = value` in walk order: the names of `value` flow into `target`.
    flows: list[tuple[str, cst.CSTNode]] = field(default_factory=list)
    # Names read in a backward's target or arguments -> the first such backward.
    backward: dict[str, cst.Call] = field(default_factory=dict)
    # Calls of this module's own functions or methods (not forwards), which may run backward on
    # what they are handed; their arguments are read only when a rule asks (`handed_to`).
    calls: list[cst.Call] = field(default_factory=list)
    _backed: set[str] | None = None

    @property
    def backed(self) -> set[str]:
        """Every name whose value flows into a backward() here."""
        if self._backed is None:
            backed = set(self.backward)
            if backed:
                flows = [(target, names_in(value)) for target, value in self.flows]
                changed = True
                while changed:
                    changed = False
                    for target, sources in flows:
                        if target in backed and not sources <= backed:
                            backed |= sources
                            changed = True
            self._backed = backed
        return self._backed

    def freeing(self, names: set[str]) -> cst.Call | None:
        """The backward that frees the graph of values bound to `names`, if one is here."""
        if not names & self.backed:
            return None
        return next(iter(self.backward.values()), None)

    def handed_to(self, names: set[str]) -> cst.Call | None:
        """The first of this function's calls of its module's own code that is handed one of `names`."""
        for call in self.calls:
            if any(names_in(arg.value) & names for arg in call.args):
                return call
        return None


@dataclass(eq=False)
class _Frame:
    key: str | None
    decorator: GradMode | None = None
    statement: GradMode | None = None
    withs: list[GradMode | None] = field(default_factory=list)
    # Per name: Status.PROVEN / ASSUMED when it carries a graph (how well that is shown), False
    # when it is known not to, None when unknown.
    graphs: dict[str, Status | bool | None] = field(default_factory=dict)
    # A decorator that is neither a grad-mode one nor known to leave grad mode alone: the
    # function may run without grad whatever its body says (the text of the decorator).
    unknown_decorator: str = ""
    reach: BackwardReach = field(default_factory=BackwardReach)


@dataclass(eq=False)
class _Class:
    name: str
    depth: int
    module: bool = False
    graphs: dict[str, Status | bool | None] = field(default_factory=dict)


class AutogradTracker:
    def __init__(self, imports: ImportTable, facts: NameFacts) -> None:
        self._imports = imports
        self._facts = facts
        self._frames: list[_Frame] = [_Frame(key=None)]
        self._classes: list[_Class] = []
        # Call sites by callee key (`f`, `Class.method`): the grad mode at each call.
        self._sites: dict[str, list[GradMode]] = {}
        # `self.` attributes some backward() of the module reads (`self.loss.backward()`).
        self.backed_attributes: set[str] = set()

    def enter_class(self, node: cst.ClassDef) -> None:
        # A class deriving from `nn.Module` (or a torch module class): `self(x)` is its forward.
        module = any(
            (self._imports.qualified_name(base.value) or "").startswith("torch.nn.") for base in node.bases
        )
        self._classes.append(_Class(node.name.value, depth=len(self._frames), module=module))

    def leave_class(self) -> None:
        self._classes.pop()

    def enter_function(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        in_class = bool(self._classes) and self._classes[-1].depth == len(self._frames)
        key = f"{self._classes[-1].name}.{name}" if in_class else name
        frame = _Frame(key=key)
        for decorator in node.decorators:
            mode = grad_mode_of(decorator.decorator, self._imports) or _grad_off_by_name(decorator.decorator)
            if mode is not None:
                frame.decorator = mode
            elif not self._is_grad_neutral(decorator.decorator):
                frame.unknown_decorator = frame.unknown_decorator or _decorator_text(decorator.decorator)
        if in_class and (name in _HOOKS_WITHOUT_GRAD or name.startswith(_HOOK_PREFIXES_WITHOUT_GRAD)):
            frame.decorator = frame.decorator or GradMode.DISABLED
        self._frames.append(frame)

    def leave_function(self) -> None:
        self._frames.pop()

    def _is_grad_neutral(self, decorator: cst.BaseExpression) -> bool:
        func = decorator.func if type(decorator) is cst.Call else decorator
        name = self._imports.qualified_name(func) or dotted_name(func) or ""
        return name in _GRAD_NEUTRAL_DECORATORS or name.rsplit(".", 1)[-1] in ("setter", "getter", "deleter")

    def grad_enabled_proof(self) -> tuple[Status, str]:
        """How well it is shown that grad mode is on here: no grad-mode context, statement or
        decorator turns it off, and no decorator the analysis does not know could (a decorator
        factory may return `torch.inference_mode()(fn)`). Callers in other modules are not seen."""
        frame = self._frames[-1]
        if frame.unknown_decorator and frame.decorator is None and not frame.withs and frame.statement is None:
            return Status.ASSUMED, f"grad mode is on unless the decorator `@{frame.unknown_decorator}` turns it off"
        return Status.PROVEN, "grad mode is on here (no `no_grad`/`inference_mode` context or decorator)"

    def enter_with(self, node: cst.With) -> None:
        modes = [grad_mode_of(item.item, self._imports) for item in node.items]
        known = [m for m in modes if m is not None]
        self._frames[-1].withs.append(known[-1] if known else None)

    def leave_with(self) -> None:
        self._frames[-1].withs.pop()

    def on_statement(self, node: cst.Expr) -> None:
        """`torch.set_grad_enabled(False)` as a statement switches grad mode for what follows, and so
        does a grad-mode context entered on an `ExitStack`."""
        if type(node.value) is cst.Call:
            qualified = self._imports.call_name(node.value) or ""
            if qualified.startswith("torch.") and qualified.endswith(".set_grad_enabled"):
                self._frames[-1].statement = grad_mode_of(node.value, self._imports)
            elif method_name(node.value) == "enter_context" and node.value.args:
                # `stack.enter_context(torch.no_grad())` in `with ExitStack() as stack:` holds
                # until that `with` ends (the innermost one; outside any, the function's end).
                mode = grad_mode_of(node.value.args[0].value, self._imports)
                frame = self._frames[-1]
                if mode is not None and frame.withs:
                    frame.withs[-1] = mode
                elif mode is not None:
                    frame.statement = mode

    def on_call(self, call: cst.Call) -> None:
        key = self._callee_key(call)
        if key is not None:
            self._sites.setdefault(key, []).append(self.grad_mode())
        reach = self._frames[-1].reach
        method = method_name(call)
        qualified = self._imports.call_name(call) or ""
        if method in _BACKWARD_METHODS or terminal_name(call.func) in _BACKWARD_METHODS or (
            qualified == "torch.autograd.grad"
        ):
            for part in (receiver(call), *(arg.value for arg in call.args)):
                for name in names_in(part) if part is not None else ():
                    reach.backward.setdefault(name, call)
                    if name.startswith("self."):
                        self.backed_attributes.add(name)
        elif key is not None and call.args and not qualified and (
            type(call.func) is not cst.Name or call.func.value not in _BUILTINS
        ) and not self.is_forward(call):
            reach.calls.append(call)

    def reach(self) -> BackwardReach:
        """What reaches a backward in the function being walked (complete once the walk is done)."""
        return self._frames[-1].reach

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if type(target) in (cst.Tuple, cst.List):
            self._unpack(target, value)
            return
        if type(target) is cst.StarredElement:
            self.bind(target.value, None)
            return
        name = dotted_name(target)
        if name is None:
            return
        self._scope_for(name)[name] = self._graph_state(value)
        if value is not None:
            self._frames[-1].reach.flows.append((name, value))

    def _unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression | None) -> None:
        """`a, b = x, y` element by element; `logits, loss = model(x, y)`: every output of a
        forward carries its graph; the elements of any other value are unknown (a loss helper's
        `loss, parts = ...` often returns its parts detached)."""
        pairs = element_pairs(target, value)
        if pairs is not None:
            for element, item in pairs:
                self.bind(element, item)
            return
        elements = target.elements
        forward = type(value) is cst.Call and self.is_model_call(value) and self.grad_mode() is GradMode.ENABLED
        state = self.graph_status(value) if forward else None
        for element in elements:
            inner = element.value
            if type(element) is cst.StarredElement or type(inner) in (cst.Tuple, cst.List):
                self.bind(inner, None)
                continue
            name = dotted_name(inner)
            if name is not None:
                self._scope_for(name)[name] = state

    def bind_in_place(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x += v`: x keeps its graph and gains v's."""
        name = dotted_name(target)
        if name is not None:
            self._frames[-1].reach.flows.append((name, value))
            grows = self.grad_mode() is GradMode.ENABLED and self.carries_graph(value)
            self._scope_for(name)[name] = self.graph_status(value) if grows else self._lookup(name)

    def grad_mode(self) -> GradMode:
        frame = self._frames[-1]
        for mode in reversed(frame.withs):
            if mode is not None:
                return mode
        return frame.statement or frame.decorator or GradMode.ENABLED

    @property
    def function_key(self) -> str | None:
        return self._frames[-1].key

    def called_without_grad(self, key: str | None) -> bool:
        """Some call site in this module runs the function with grad off (ask after the walk)."""
        return key is not None and any(mode is not GradMode.ENABLED for mode in self._sites.get(key, ()))

    def carries_graph(self, node: cst.BaseExpression) -> bool:
        if type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            if name is not None and self._is_bound(name):
                return bool(self._lookup(name))
            if type(node) is cst.Attribute:
                return node.attr.value in _GRAPH_ATTRIBUTES and self.carries_graph(node.value)
            return False
        if type(node) is cst.Subscript:
            return self.carries_graph(node.value)
        if type(node) is cst.BinaryOperation:
            return self.carries_graph(node.left) or self.carries_graph(node.right)
        if type(node) is cst.UnaryOperation:
            return type(node.operator) is not cst.Not and self.carries_graph(node.expression)
        if type(node) in (cst.List, cst.Tuple):
            return any(self.carries_graph(e.value) for e in node.elements)
        if type(node) in (cst.ListComp, cst.GeneratorExp):
            return self.carries_graph(node.elt)
        if type(node) is cst.IfExp:
            return self.carries_graph(node.body) and self.carries_graph(node.orelse)
        if type(node) is cst.Call:
            return self._call_carries_graph(node)
        return False

    def _call_carries_graph(self, call: cst.Call) -> bool:
        if self.is_forward(call):
            return True
        args_carry = any(self.carries_graph(arg.value) for arg in call.args if not arg.star)
        qualified = self._imports.call_name(call)
        if qualified is not None:
            last = qualified.rsplit(".", 1)[-1]
            return qualified.startswith("torch.") and last not in _NO_GRAPH_FUNCTIONS and args_carry
        method = method_name(call)
        if method is not None:
            owner = receiver(call)
            if method == "scale":
                return args_carry
            return method in _GRAPH_METHODS and owner is not None and self.carries_graph(owner)
        func = dotted_name(call.func)
        return func in _CONTAINER_FUNCTIONS and args_carry

    def is_forward(self, call: cst.Call) -> bool:
        """A model forward, or a criterion applied to something that may carry a graph."""
        func = call.func
        callee = terminal_name(func)
        if self._imports.qualified_name(func) is None and is_loss_callee(callee):
            # The prediction comes first by convention; targets rarely carry a graph.
            inputs = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
            return not inputs or not self._is_graph_free(inputs[0]) or any(self.carries_graph(v) for v in inputs)
        return self.is_model_call(call)

    def is_model_call(self, call: cst.Call) -> bool:
        """`model(x)`, `self.encoder(x)`, `self(x)` in a class, a name bound to an `nn.Module`."""
        func = call.func
        if type(func) is cst.Name and func.value == "self":
            return bool(self._classes)
        if self._imports.qualified_name(func) is not None or self._facts.kind_of(call) is Kind.MODULE:
            return False  # a library call, or a module's constructor (`Net()`), not a forward
        return is_model_name(terminal_name(func)) or self._facts.kind_of(func) is Kind.MODULE

    def _graph_state(self, value: cst.BaseExpression | None) -> Status | bool | None:
        """PROVEN or ASSUMED: carries a graph (how well shown); False: known not to; None: unknown."""
        if value is None:
            return None
        if self.grad_mode() is not GradMode.ENABLED or self._is_graph_free(value):
            return False
        return self.graph_status(value)

    def graph_names(self, node: cst.BaseExpression) -> set[str]:
        """The names in `node` bound to values that carry a graph: what a backward elsewhere could
        have freed (a fresh forward in `node` itself builds a graph no other backward frees)."""
        return {name for name in names_in(node) if self._is_bound(name) and self._lookup(name)}

    def graph_status(self, node: cst.BaseExpression) -> Status | None:
        """How well it is shown that `node` carries a graph: PROVEN when it rests on an `nn.Module`
        forward (`self(...)` of a module class, a name bound to an `nn.*` layer) or torch math on
        such a value; ASSUMED when it rests on names alone (`model(x)`, `compute_loss(...)`); None
        when `carries_graph` would say no."""
        if not self.carries_graph(node):
            return None
        return Status.PROVEN if self._shown(node) else Status.ASSUMED

    def _shown(self, node: cst.BaseExpression) -> bool:
        """`carries_graph(node)` holds on structural evidence, not on a name heuristic."""
        kind = type(node)
        if kind in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            if name is not None and self._is_bound(name):
                return self._lookup(name) is Status.PROVEN
            return kind is cst.Attribute and self._shown(node.value)
        if kind is cst.Subscript:
            return self._shown(node.value)
        if kind is cst.BinaryOperation:
            return any(self.carries_graph(side) and self._shown(side) for side in (node.left, node.right))
        if kind is cst.UnaryOperation:
            return self._shown(node.expression)
        if kind in (cst.List, cst.Tuple):
            return any(self.carries_graph(e.value) and self._shown(e.value) for e in node.elements)
        if kind in (cst.ListComp, cst.GeneratorExp):
            return self._shown(node.elt)
        if kind is cst.IfExp:
            return self._shown(node.body) and self._shown(node.orelse)
        if kind is cst.Call:
            return self._call_shown(node)
        return False

    def _call_shown(self, call: cst.Call) -> bool:
        graph_args = [arg.value for arg in call.args if not arg.star and self.carries_graph(arg.value)]
        func = call.func
        if self.is_model_call(call):
            # `self(x)` in a module class, a module (`model(x)`), or a part of one (`model.encoder(x)`).
            return (type(func) is cst.Name and func.value == "self" and self._in_module_class) or (
                self._facts.kind_of(func) is Kind.MODULE
                or (type(func) is cst.Attribute and self._facts.kind_of(func.value) is Kind.MODULE)
            )
        if self._imports.qualified_name(func) is None and is_loss_callee(terminal_name(func)):
            # A criterion applied to a value shown to carry a graph keeps it, whatever it is called.
            return any(self._shown(value) for value in graph_args)
        method = method_name(call)
        if method is not None and self._imports.call_name(call) is None:
            owner = receiver(call)
            if method == "scale":
                return any(self._shown(value) for value in graph_args)
            return owner is not None and self._shown(owner)
        return any(self._shown(value) for value in graph_args)

    @property
    def _in_module_class(self) -> bool:
        return bool(self._classes) and self._classes[-1].module

    def _is_graph_free(self, node: cst.BaseExpression) -> bool:
        if type(node) in (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString):
            return True
        if type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            if name is not None and self._lookup(name) is False:
                return True
            return type(node) is cst.Attribute and node.attr.value in {"data", "grad", "shape"}
        if type(node) is cst.Call:
            method = method_name(node)
            if method in _GRAPH_CUTS:
                return True
            if method in _GRAPH_METHODS and receiver(node) is not None:
                return self._is_graph_free(receiver(node))
            func = dotted_name(node.func)
            return func in {"float", "int", "len", "bool"} and self._imports.qualify(func) is None
        return False

    def _scope_for(self, name: str) -> dict[str, bool | None]:
        if name.startswith("self.") and self._classes:
            return self._classes[-1].graphs
        return self._frames[-1].graphs

    def _lookup(self, name: str) -> bool | None:
        if name.startswith("self.") and self._classes:
            return self._classes[-1].graphs.get(name)
        for frame in reversed(self._frames):
            if name in frame.graphs:
                return frame.graphs[name]
        return None

    def _is_bound(self, name: str) -> bool:
        if name.startswith("self.") and self._classes:
            return name in self._classes[-1].graphs
        return any(name in frame.graphs for frame in self._frames)

    def _callee_key(self, call: cst.Call) -> str | None:
        func = call.func
        if type(func) is cst.Name:
            return func.value
        if type(func) is cst.Attribute and dotted_name(func.value) == "self" and self._classes:
            return f"{self._classes[-1].name}.{func.attr.value}"
        return None


def _decorator_text(decorator: cst.BaseExpression) -> str:
    func = decorator.func if type(decorator) is cst.Call else decorator
    name = dotted_name(func) or "..."
    return f"{name}()" if type(decorator) is cst.Call else name
