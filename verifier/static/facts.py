"""Light type facts: which names hold a tensor, a GradScaler, an optimizer, a DataLoader.

Learned from assignments in walk order, scoped per function (with `self.x` kept per class),
from annotations (`x: torch.Tensor`, `-> torch.Tensor`), and from what a backward later runs on
(`losses.py`). When a value's kind cannot be known statically the answer is None and rules stay silent:
a false alarm costs more than a missed one in a merge gate.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable

import libcst as cst

from verifier.static.class_attributes import REGISTERS, registered_attribute
from verifier.static.heat import is_model_name, is_optimizer_name, is_scaler_name
from verifier.static.losses import BACKWARD_BY_ARGUMENT, backward_operand
from verifier.static.names import (
    ImportTable, dict_items, dotted_name, element_pairs, keyed_name, method_name, receiver, terminal_name,
)
from verifier.static.scopes import ScopedNames
from verifier.static.torch_api import returns_tensor


class Kind(enum.Enum):
    TENSOR = "tensor"
    NUMBER = "number"
    SCALER = "scaler"
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    DATALOADER = "dataloader"
    MODULE = "module"
    NUMPY = "numpy"
    # A CUDA tensor type of the legacy API (`torch.cuda.FloatTensor`), or a name bound to one
    # (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`): calling it makes a
    # tensor on the device, `x.type(Tensor)` copies `x` there.
    DEVICE_TENSOR_TYPE = "device tensor type"
    OTHER = "other"


TENSOR_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "norm", "detach", "abs", "std", "var", "argmax", "argmin",
        "float", "half", "bfloat16", "double", "long", "int", "bool", "clone", "exp", "log",
        "sqrt", "pow", "square", "to", "cuda", "view", "reshape", "flatten", "squeeze",
        "unsqueeze", "softmax", "log_softmax", "sigmoid", "tanh", "relu", "eq", "ne", "gt",
        "lt", "ge", "le", "any", "all", "isfinite", "isnan", "isinf", "prod", "cumsum",
        "contiguous", "t", "transpose", "permute", "masked_fill", "clamp", "add", "sub", "mul",
        "div", "matmul", "type_as", "expand", "repeat", "gather", "index_select", "count_nonzero",
    }
)
_TENSOR_ATTRIBUTES = frozenset({"grad", "data", "loss", "logits"})
# Tensor attributes whose names are common for other things (`self.T` is a sequence length).
_TENSOR_ONLY_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})
_NUMBER_FUNCTIONS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
     "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer", "random.random"}
)
_NUMBER_METHODS = frozenset({"item", "tolist"})
# A tensor's sizes, read without waiting for it: `x.size(0)`, `x.numel()` (not `x.size()`, a tuple).
_SIZE_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "get_device"})
# Methods only `nn.Module` has (not tensors, optimizers or schedulers, which share `state_dict`).
_TENSOR_ANNOTATIONS = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"})
_MODULE_API = frozenset(
    {"eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children", "named_children",
     "buffers", "named_buffers", "requires_grad_", "register_forward_hook", "register_forward_pre_hook",
     "register_full_backward_hook", "load_state_dict"}
)
# The classes of `torch.nn` whose instances are tensors: a module's parameters and buffers.
MODULE_STATE = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer"})
# Functions outside the tensor namespaces that return a tensor on the parameters' device.
_TENSOR_RETURNING = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.get_total_norm"}) | MODULE_STATE
_NUMBER_BUILTINS = frozenset({"float", "int", "len", "round", "abs", "sum", "min", "max"})


class NameFacts:
    def __init__(self, imports: ImportTable) -> None:
        self._imports = imports
        self._names: ScopedNames[Kind] = ScopedNames()
        # What the module's own functions return, when every `return` agrees (`make_schedule()`).
        self._functions: list[tuple[str, list[Kind | None]]] = []
        self._returns: dict[str, Kind | None] = {}
        # Classes of this module that derive from `torch.nn.Module` (directly or through one
        # another): calling one builds a module.
        self._module_classes: set[str] = set()
        # Per function: the bare names whose kind was asked and not known (a parameter among
        # them may be bound a kind by the project pass).
        self._unknown: list[set[str]] = [set()]
        # The positional parameters of the functions being walked, and per function of this
        # module the positions whose argument a backward runs on (`def _backward(loss):
        # loss.backward()`): what a call hands there is a tensor.
        self._params: list[tuple[str, ...]] = [()]
        self._losses: list[frozenset[str]] = [frozenset()]
        # Functions of this module annotated `-> torch.Tensor`.
        self._declared_tensor_returns: set[str] = set()
        self._backward_params: dict[str, set[int]] = {}
        # The string-keyed items each name was last given by a dict literal (`bind`).
        self._keys: dict[str, set[str]] = {}
        # What a call of a project function returns, as the project pass found it (set by the
        # engine: `HeatModel.returned_by`); nothing is known before that pass.
        self.returned_by: Callable[[cst.Call, str | None], tuple | None] = _nothing_returned
        # The module defines or imports a loss scaler of its own (`class ExpLossScaler`, `from
        # .fp16 import DynamicLossScaler`): a receiver only named like a scaler may be one of
        # those, whose `scale`/`update` are not GradScaler's (set by the engine).
        self.own_loss_scaler = False

    def enter_function(self, name: str = "", params: tuple[str, ...] = (), losses: frozenset[str] = frozenset()) -> None:
        """`losses`: names the function hands to a backward somewhere in its body (`losses.py`);
        where nothing else says what they hold, they hold a tensor, before the backward too."""
        self._names.enter_function()
        self._unknown.append(set())
        self._functions.append((name, []))
        self._params.append(params)
        self._losses.append(losses)

    def declare(self, function: cst.FunctionDef) -> None:
        """Annotations are declarations: a parameter annotated `torch.Tensor` holds a tensor
        (unless its call sites say more, `seed`), and so does what a function annotated
        `-> torch.Tensor` returns, whatever its `return` lines show."""
        for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            if param.annotation is not None and self._is_tensor_annotation(param.annotation.annotation):
                self._names.set(param.name.value, Kind.TENSOR)
        if function.returns is not None and self._is_tensor_annotation(function.returns.annotation) and self._functions:
            self._declared_tensor_returns.add(self._functions[-1][0])

    def _is_tensor_annotation(self, annotation: cst.BaseExpression) -> bool:
        return (self._imports.qualified_name(annotation) or "") in _TENSOR_ANNOTATIONS

    def set_module_losses(self, losses: frozenset[str]) -> None:
        """Names a script's top-level code hands to a backward (see `enter_function`)."""
        self._losses[0] = losses

    def seed(self, name: str, kind: Kind) -> None:
        """A parameter of the function just entered holds `kind` at every visible call site."""
        self._names.set(name, kind)

    def note_device_tensor(self, target: cst.BaseExpression) -> None:
        """`target` was just bound to a tensor the place model shows computed on the accelerator
        (`places.makes_device_tensor`); kept only where the type facts know nothing better."""
        name = dotted_name(target)
        if name is not None and self.lookup(name) is None:
            self._names.set(name, Kind.TENSOR)

    def unknown_in_function(self) -> set[str]:
        """Bare names of the function being walked whose kind was asked and not known."""
        return self._unknown[-1]

    def leave_function(self) -> None:
        self._names.leave_function()
        self._unknown.pop()
        self._params.pop()
        self._losses.pop()
        name, kinds = self._functions.pop()
        if name in self._declared_tensor_returns:
            self._returns[name] = Kind.TENSOR
        elif name and kinds:
            self._returns[name] = kinds[0] if all(k is kinds[0] for k in kinds) else None

    def on_return(self, value: cst.BaseExpression | None) -> None:
        if self._functions:
            self._functions[-1][1].append(self.kind_of(value) if value is not None else None)

    def on_call(self, call: cst.Call) -> None:
        """`model.eval()`, `net.parameters()`: a value used through the `nn.Module` API is a module,
        whatever it is called (a parameter, an attribute, a project class from another file).
        `loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`: what a
        backward runs on is a tensor (with a graph), whatever function made it."""
        method = method_name(call)
        if method == "backward" or method in BACKWARD_BY_ARGUMENT:
            self._learn_backward_operand(call)
            return
        if method in REGISTERS:
            self._learn_registered(call)
            return
        if type(call.func) is cst.Name and call.func.value in self._backward_params:
            positions = self._backward_params[call.func.value]
            for index, arg in enumerate(call.args):
                if index in positions and arg.keyword is None and not arg.star:
                    self._learn_tensor(arg.value)
            return
        if method not in _MODULE_API:
            return
        owner = receiver(call)
        if owner is not None and type(owner) in (cst.Name, cst.Attribute) and self.kind_of(owner) is None:
            self._set(owner, Kind.MODULE)

    def _learn_registered(self, call: cst.Call) -> None:
        """`self.register_buffer("update_count", torch.tensor([0]))`: `self.update_count` is a
        tensor that lives wherever the module is moved (a buffer of `None` is no tensor)."""
        registered = registered_attribute(call)
        if registered is None:
            return
        name, value = registered
        if value is None or (type(value) is cst.Name and value.value == "None"):
            return
        self._names.set(f"self.{name}", Kind.TENSOR)

    def _learn_backward_operand(self, call: cst.Call) -> None:
        owner = receiver(call)
        operand = backward_operand(call, owner is not None and self.kind_of(owner) is Kind.TENSOR)
        if operand is None:
            return
        self._learn_tensor(operand)
        params = self._params[-1]
        if type(operand) is cst.Name and operand.value in params and self._functions:
            self._backward_params.setdefault(self._functions[-1][0], set()).add(params.index(operand.value))

    def _learn_tensor(self, operand: cst.BaseExpression) -> None:
        if type(operand) in (cst.Name, cst.Attribute) and self.kind_of(operand) is None:
            self._set(operand, Kind.TENSOR)

    def enter_class(self, node: cst.ClassDef | None = None) -> None:
        self._names.enter_class()
        if node is not None and any(self._is_module_class(base.value) for base in node.bases):
            self._module_classes.add(node.name.value)

    def _is_module_class(self, base: cst.BaseExpression) -> bool:
        qualified = self._imports.qualified_name(base) or ""
        return qualified.startswith("torch.nn.") or (type(base) is cst.Name and base.value in self._module_classes)

    def leave_class(self) -> None:
        self._names.leave_class()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if type(target) in (cst.Tuple, cst.List):
            self._unpack(target, value)
            return
        if type(target) is cst.StarredElement:
            self._set(target.value, None)
            return
        self._set(target, self.kind_of(value) if value is not None else None)
        self._bind_items(target, value)

    def bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for d in done:` over a tensor binds each row or element, a tensor too (`if d:` then
        reads it on the host, once per element); so do the tensors of `enumerate(t)` and
        `zip(a, b)`. Anything else iterated is unknown."""
        kind = self._element_kind(iterable)
        if kind is Kind.TENSOR and type(target) in (cst.Name, cst.Attribute):
            self._set(target, kind)
            return
        if type(target) is not cst.Tuple or type(iterable) is not cst.Call:
            self.bind(target, None)
            return
        function = dotted_name(iterable.func) or ""
        sources = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
        if function == "enumerate" and len(sources) == 1 and len(target.elements) == 2:
            pairs = [(target.elements[0].value, None), (target.elements[1].value, sources[0])]
        elif function == "zip" and len(sources) == len(target.elements):
            pairs = [(element.value, source) for element, source in zip(target.elements, sources)]
        else:
            self.bind(target, None)
            return
        for element, source in pairs:
            if source is not None and type(element) in (cst.Name, cst.Attribute):
                self._set(element, self._element_kind(source))
            else:
                self.bind(element, None)

    def _element_kind(self, iterable: cst.BaseExpression) -> Kind | None:
        return Kind.TENSOR if type(iterable) in (cst.Name, cst.Attribute) and self.kind_of(iterable) is Kind.TENSOR else None

    def _bind_items(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """`out = {"loss": criterion(...)}`: `out["loss"]` is what was put there; rebinding `out`
        forgets what its keys held."""
        name = dotted_name(target)
        if name is None:
            return
        for key in self._keys.pop(name, ()):
            self._names.forget(key)
        items = dict_items(value)
        for key, item in items or ():
            keyed = f"{name}[{key!r}]"
            kind = self.kind_of(item)
            if kind is not None:
                self._names.set(keyed, kind)
                self._keys.setdefault(name, set()).add(keyed)

    def _unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression | None) -> None:
        """`a, b = x, y` element by element; `logits, loss = model(x, y)`: every element of a
        tensor-valued result (a forward's outputs, `t.max(dim=1)`, `t.chunk(2)`) is a tensor; a
        starred element collects a list; anything else is unknown."""
        pairs = element_pairs(target, value)
        if pairs is not None:
            for element, item in pairs:
                self.bind(element, item)
            return
        elements = target.elements
        literal = type(value) in (cst.Tuple, cst.List)
        returned = self.returned_by(value) if type(value) is cst.Call else None
        if returned is not None and returned[0] == "tuple" and len(returned) == len(elements) + 1:
            # `errD, errG = train_step()`: each target is what that position of every return is.
            for element, fact in zip(elements, returned[1:]):
                if type(element) is cst.StarredElement or type(element.value) in (cst.Tuple, cst.List):
                    self.bind(element if type(element) is cst.StarredElement else element.value, None)
                else:
                    self._set(element.value, _kind_of_fact(fact))
            return
        kind = self.kind_of(value) if value is not None and not literal else None
        # A helper that is a tensor only by its loss-like name returns the loss first
        # (`loss, parts = compute_loss(...)`); what follows it is not known.
        first_only = kind is Kind.TENSOR and type(value) is cst.Call and self.tensor_by_name_only(value)
        for index, element in enumerate(elements):
            if type(element) is cst.StarredElement:
                self.bind(element, None)
            elif type(element.value) in (cst.Tuple, cst.List):
                self._unpack(element.value, None)
            else:
                tensor = kind is Kind.TENSOR and (index == 0 or not first_only)
                self._set(element.value, Kind.TENSOR if tensor else None)

    def bind_in_place(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x += v`: what `x + v` would be."""
        self._set(target, _combine(self.kind_of(target), self.kind_of(value)))

    def _set(self, target: cst.BaseExpression, kind: Kind | None) -> None:
        name = dotted_name(target) or keyed_name(target)
        if name is None:
            return
        if kind is None:
            self._names.forget(name)
        else:
            self._names.set(name, kind)

    def lookup(self, name: str) -> Kind | None:
        return self._names.lookup(name)

    def kind_of(self, node: cst.BaseExpression) -> Kind | None:
        if type(node) in (cst.Integer, cst.Float):
            return Kind.NUMBER
        if type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            known = self.lookup(name) if name else None
            if known is not None:
                return known
            if self._is_device_tensor_type(node):
                return Kind.DEVICE_TENSOR_TYPE
            if name in self._losses[-1]:
                return Kind.TENSOR
            if type(node) is cst.Name:
                self._unknown[-1].add(node.value)
            if type(node) is cst.Attribute and node.attr.value in _TENSOR_ATTRIBUTES:
                return Kind.TENSOR
            if type(node) is cst.Attribute and node.attr.value in _TENSOR_ONLY_ATTRIBUTES:
                return Kind.TENSOR if self.kind_of(node.value) is Kind.TENSOR else None
            return None
        if type(node) is cst.Call:
            return self._kind_of_call(node)
        if type(node) is cst.Subscript:
            keyed = keyed_name(node)
            known = self.lookup(keyed) if keyed is not None else None
            if known is not None:
                return known
            container = self.kind_of(node.value)
            return container if container in (Kind.TENSOR, Kind.NUMPY) else None
        if type(node) is cst.Dict:
            # A dict whose values are all NumPy arrays: `schedules["lr"][step]` is NumPy too.
            values = [self.kind_of(e.value) for e in node.elements if type(e) is cst.DictElement]
            return Kind.NUMPY if values and all(v is Kind.NUMPY for v in values) else None
        if type(node) is cst.BinaryOperation:
            return _combine(self.kind_of(node.left), self.kind_of(node.right))
        if type(node) is cst.UnaryOperation:
            return self.kind_of(node.expression)
        if type(node) is cst.IfExp:
            # `torch.cuda.FloatTensor if cuda else torch.FloatTensor`: the device's type wherever
            # the device is there (as `"cuda" if available else "cpu"` names the device).
            if self.names_device_tensor_type(node):
                return Kind.DEVICE_TENSOR_TYPE
            # `data = train_data if split == "train" else val_data`: what both branches are.
            body = self.kind_of(node.body)
            return body if body is not None and body is self.kind_of(node.orelse) else None
        if type(node) is cst.Comparison:
            # `t is None` compares identities on the host; it never reads the tensor.
            if all(type(c.operator) in (cst.Is, cst.IsNot) for c in node.comparisons):
                return None
            # `"aux_outputs" in outputs` looks a key up in a container (model outputs are often
            # dicts): a tensor test only when a number or a tensor is looked for (`0 in preds`).
            if all(type(c.operator) in (cst.In, cst.NotIn) for c in node.comparisons):
                if self.kind_of(node.left) not in (Kind.NUMBER, Kind.TENSOR):
                    return None
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            if any(type(operand) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString) for operand in operands):
                # `args.optim.loss == "l1"`: a string is never compared element-wise; a setting is.
                return None
            kinds = [self.kind_of(operand) for operand in operands]
            return Kind.TENSOR if Kind.TENSOR in kinds else None
        return None

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind_of(node) is Kind.TENSOR

    def is_scaler(self, node: cst.BaseExpression | None) -> bool:
        if node is None:
            return False
        kind = self.kind_of(node)
        if kind is not None:
            return kind is Kind.SCALER
        return not self.own_loss_scaler and is_scaler_name(terminal_name(node))

    def is_optimizer(self, node: cst.BaseExpression | None) -> bool:
        if node is None:
            return False
        kind = self.kind_of(node)
        if kind is not None:
            return kind is Kind.OPTIMIZER
        return is_optimizer_name(terminal_name(node))

    def _is_device_tensor_type(self, node: cst.Name | cst.Attribute) -> bool:
        """`torch.cuda.FloatTensor`, `torch.cuda.LongTensor`, ... (the name is tested first: cheap)."""
        if not (terminal_name(node) or "").endswith("Tensor"):
            return False
        qualified = self._imports.qualified_name(node) or ""
        return qualified.startswith("torch.cuda.") and qualified.count(".") == 2

    def names_device_tensor_type(self, node: cst.BaseExpression) -> bool:
        """`torch.cuda.FloatTensor`, or a name bound to it or to `A if cond else B` with it in a
        branch; asked of every call's callee, so without `kind_of`'s bookkeeping of unknown names."""
        if type(node) is cst.IfExp:
            return self.names_device_tensor_type(node.body) or self.names_device_tensor_type(node.orelse)
        if type(node) not in (cst.Name, cst.Attribute):
            return False
        name = dotted_name(node)
        known = self.lookup(name) if name else None
        return known is Kind.DEVICE_TENSOR_TYPE or (known is None and self._is_device_tensor_type(node))

    def _kind_of_call(self, call: cst.Call) -> Kind | None:
        if self.names_device_tensor_type(call.func):
            return Kind.TENSOR  # `Tensor(n, 1)`, `Tensor(np_array)`: a tensor made on the device
        if method_name(call) == "type" and call.args and self.names_device_tensor_type(call.args[0].value):
            return Kind.TENSOR  # `imgs.type(Tensor)`: a copy on the device
        qualified = self._imports.call_name(call) or ""
        last = qualified.rsplit(".", 1)[-1]
        if qualified in _TENSOR_RETURNING:
            return Kind.TENSOR
        if qualified.startswith("numpy."):
            return Kind.NUMPY
        if qualified in _NUMBER_FUNCTIONS or qualified.startswith("math."):
            return Kind.NUMBER
        if type(call.func) is cst.Name and not qualified and self._returns.get(call.func.value) is not None:
            return self._returns[call.func.value]
        if last == "GradScaler":
            return Kind.SCALER
        if last == "DataLoader":
            return Kind.DATALOADER
        if qualified.startswith("torch.optim.lr_scheduler."):
            return Kind.SCHEDULER
        if qualified.startswith("torch.optim.") and last[:1].isupper():
            return Kind.OPTIMIZER
        if qualified.startswith("torch.nn.") and last[:1].isupper():
            return Kind.MODULE
        if type(call.func) is cst.Name and not qualified and call.func.value in self._module_classes:
            return Kind.MODULE
        if returns_tensor(qualified):
            return Kind.TENSOR
        method = method_name(call)
        if method is not None:
            owner = receiver(call)
            if method in _NUMBER_METHODS or reads_a_size(call):
                return Kind.NUMBER
            if method == "scale" and self.is_scaler(owner):
                return Kind.TENSOR
            if method in TENSOR_METHODS and owner is not None and self.kind_of(owner) is Kind.TENSOR:
                return Kind.TENSOR
        func_name = dotted_name(call.func)
        if func_name == "sum" and not qualified:
            return self._kind_of_sum(call)
        if func_name in _NUMBER_BUILTINS and not qualified:
            return Kind.NUMBER
        by_name = self._tensor_by_name(call) is not None
        returned = self.returned_by(call, "tensor" if by_name else None)
        if returned is not None:
            # The project's own function, wherever it is defined: what its returns give (a
            # tuple is unpacked element by element, `_unpack`).
            return None if returned[0] == "tuple" else _kind_of_fact(returned)
        return Kind.TENSOR if by_name else None

    def tensor_by_name_only(self, call: cst.Call) -> bool:
        """A tensor only because its callee is named like a loss (not a module, not torch)."""
        return (
            not self._imports.call_name(call)
            and method_name(call) not in TENSOR_METHODS
            and self._tensor_by_name(call) == "loss"
        )

    def _tensor_by_name(self, call: cst.Call) -> str | None:
        """Why the callee's name alone says the call gives a tensor: "forward" (`model(x)`, or a
        name known to hold a module; `KGEModel(...)`, a class by its spelling, builds one), "loss"
        (`criterion(...)`, `compute_loss(...)`), or None."""
        func_name = dotted_name(call.func)
        callee = terminal_name(call.func)
        if (is_model_name(callee) and not (callee or "")[:1].isupper()) or (
            func_name and self.lookup(func_name) is Kind.MODULE
        ):
            return "forward"
        return "loss" if _computes_a_loss(callee) else None


    def _kind_of_sum(self, call: cst.Call) -> Kind | None:
        """`sum(len(t) for t in ts)` is a number; `sum(losses.values())` of device losses is a
        tensor: the kind of what is summed, unknown when that is unknown."""
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        if first is None:
            return None
        if type(first) in (cst.GeneratorExp, cst.ListComp):
            kind = self.kind_of(first.elt)
        elif type(first) in (cst.List, cst.Tuple) and first.elements:
            kinds = {self.kind_of(e.value) for e in first.elements}
            kind = Kind.TENSOR if Kind.TENSOR in kinds else Kind.NUMBER if kinds == {Kind.NUMBER} else None
        else:
            kind = Kind.TENSOR if self.kind_of(first) is Kind.TENSOR else None
        return kind if kind in (Kind.TENSOR, Kind.NUMBER) else None


def _nothing_returned(call: cst.Call, assumed: str | None = None) -> tuple | None:
    return None


def _kind_of_fact(fact: tuple | None) -> Kind | None:
    """The kind a project fact says: a number, or a tensor (wherever it lives)."""
    if fact is None:
        return None
    return Kind.NUMBER if fact[0] == "number" else Kind.TENSOR if fact[0] == "tensor" else None


# Functions that set things up, whatever they are named after (`_setup_early_exit_loss`).
SETS_UP = ("setup", "set_", "configure", "prepare", "build", "make", "create", "init", "get_", "load", "register")


def _computes_a_loss(callee: str | None) -> bool:
    """`criterion(...)`, `compute_loss(...)`, `self.loss_fn(...)`: by name, a loss computation;
    `_setup_early_exit_loss(...)` sets one up and returns configuration."""
    lowered = (callee or "").lower().lstrip("_")
    return ("criterion" in lowered or "loss" in lowered) and not lowered.startswith(SETS_UP)


def _combine(left: Kind | None, right: Kind | None) -> Kind | None:
    if Kind.TENSOR in (left, right):
        return Kind.TENSOR
    if left is Kind.NUMBER and right is Kind.NUMBER:
        return Kind.NUMBER
    # `1.0 / np.maximum(counts, 1)`: arithmetic with a NumPy array stays in NumPy.
    if Kind.NUMPY in (left, right) and {left, right} <= {Kind.NUMPY, Kind.NUMBER}:
        return Kind.NUMPY
    return None


def reads_a_size(node: cst.BaseExpression) -> bool:
    """`x.size(0)`, `x.shape[-1]`, `x.ndim`, `x.numel()`: a number describing a tensor, known on
    the host wherever the tensor is (not `x.shape` or `x.size()`, which are tuples of them)."""
    kind = type(node)
    if kind is cst.Subscript:
        return type(node.value) is cst.Attribute and node.value.attr.value == "shape"
    if kind is cst.Attribute:
        return node.attr.value == "ndim"
    if kind is not cst.Call or type(node.func) is not cst.Attribute or node.func.attr.value not in _SIZE_METHODS:
        return False
    return node.func.attr.value != "size" or bool(node.args)


# A loss scaler class by its name (`DynamicLossScaler`, `ExpLossScaler`, `GradScaler`), or by
# the GradScaler methods it defines.
_LOSS_SCALER_CLASS = re.compile(r"(loss|grad)\w*scaler", re.IGNORECASE)


def may_define_a_loss_scaler(text: str) -> bool:
    """False for a source that certainly defines and imports no loss scaler (no `scale`,
    `Scaler`, `scaler` in it): most files, which need no walk of their statements."""
    return "cale" in text


def defines_its_own_loss_scaler(module: cst.Module) -> bool:
    """Does the module define a loss scaler class (named like one, or with `scale` and `update`
    methods), or import one from outside torch? Read from its top-level statements."""
    for statement in module.body:
        kind = type(statement)
        if kind is cst.ClassDef:
            methods = {
                item.name.value for item in statement.body.body if type(item) is cst.FunctionDef
            } if type(statement.body) is cst.IndentedBlock else set()
            if _LOSS_SCALER_CLASS.search(statement.name.value) or {"scale", "update"} <= methods:
                return True
        elif kind is cst.SimpleStatementLine:
            for small in statement.body:
                if type(small) is cst.ImportFrom and _imports_a_loss_scaler(small):
                    return True
    return False


def _imports_a_loss_scaler(statement: cst.ImportFrom) -> bool:
    source = dotted_name(statement.module) if statement.module is not None else ""
    if not statement.relative and (source or "").split(".", 1)[0] == "torch":
        return False
    if type(statement.names) is cst.ImportStar:
        return False
    return any(
        type(alias.name) is cst.Name and _LOSS_SCALER_CLASS.search(alias.name.value) for alias in statement.names
    )
