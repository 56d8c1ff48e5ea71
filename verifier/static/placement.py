"""Where data lives before a step copies it to the device: host batches and host-made tensors.

VP102 and VP104 only speak about copies whose source is known to sit in host memory: a batch
yielded by a data source (`for x, y in loader`, `next(data_iter)`), a tensor made by a torch
factory without `device=` (`torch.zeros(n)`, also `torch.from_numpy` of values NumPy generated
here), or one built on the host from those (stacking, indexing, `torch.from_numpy`, `.pin_memory()`).
A parameter is host data when every visible caller passes a host batch (`bindings.py`). Anything else (function parameters, results of
unknown calls, model outputs) has no known origin, and the rules stay silent about it.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

import libcst as cst

from verifier.static.bindings import BATCH
from verifier.static.devices import destination
from verifier.static.facts import Kind, NameFacts
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import (
    ImportTable,
    dotted_name,
    has_star_args,
    iterated_source,
    keyword_arg,
    method_name,
    positional_arg,
    receiver,
)
from verifier.static.rule import Rule
from verifier.static.tracker import Tracker

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext


class Origin(enum.Enum):
    BATCH = "a batch from a data source"
    FACTORY = "created on the host by a torch factory"
    HOST = "built in host memory"
    # `torch.tensor(rewards)`: a host copy of data that arrived on the host. Moving it as a whole
    # is unavoidable (neither VP102 nor VP104); slices and stacks of it are host batches.
    DATA = "host data put in a tensor"


# Factories that allocate on the CPU unless given `device=`; `*_like` follow their input instead.
_TORCH_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "tensor", "arange", "range", "linspace", "logspace",
        "eye", "rand", "randn", "randint", "randperm", "empty_strided", "normal", "bernoulli",
        "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
        "tril_indices", "triu_indices",
    )
)
# The legacy CPU tensor types: called with a shape they allocate like a factory
# (`torch.BoolTensor(x.size())`), called with data they copy it (`_is_a_shape`).
_LEGACY_TYPES = frozenset(
    f"torch.{name}" for name in (
        "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
        "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
    )
)
HOST_FACTORIES = _TORCH_FACTORIES | _LEGACY_TYPES
# Always host memory; `torch.as_tensor(t)` is left out: it keeps a CUDA tensor where it is.
_FROM_HOST = frozenset({"torch.from_numpy", "torch.frombuffer"})
# NumPy calls that generate values rather than read data: `torch.from_numpy` of their result is a
# tensor the device could have made itself (`torch.randint(..., device=d)`), like a torch factory.
_NUMPY_FACTORIES = frozenset(
    f"numpy.{name}" for name in ("arange", "linspace", "logspace", "zeros", "ones", "full", "empty", "eye")
)
# Factories that copy the data they are given rather than making it from a shape.
_FROM_DATA = frozenset({"torch.tensor"})
JOINS = frozenset(
    {"torch.stack", "torch.cat", "torch.concat", "torch.concatenate", "torch.vstack", "torch.hstack",
     "torch.nn.utils.rnn.pad_sequence"}
)
# Methods that return a tensor in the same memory space as their receiver.
_SAME_PLACE_METHODS = frozenset(
    {"float", "half", "double", "long", "int", "bool", "byte", "bfloat16", "view", "reshape",
     "flatten", "squeeze", "unsqueeze", "permute", "transpose", "contiguous", "clone", "detach",
     "narrow", "expand", "repeat", "t", "chunk", "split", "unbind", "items", "values",
     # NumPy's: a cast or a copy of an array stays an array in host memory.
     "astype", "copy",
     # In-place fills return their receiver.
     "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "fill_diagonal_"}
)
# Math on tensors stays where its tensor operands are (as `a * b` does): element-wise functions,
# reductions, scans, products, reshapes. `torch.exp(torch.arange(half) * -scale)` is still a
# host tensor the device could have made, and moving it is the copy VP104 reports.
_SAME_PLACE_FUNCTIONS = frozenset(
    f"torch.{name}" for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh",
        "asin", "acos", "atan", "atan2", "sqrt", "rsqrt", "square", "pow", "abs", "neg", "sign", "reciprocal",
        "floor", "ceil", "round", "trunc", "frac", "clamp", "clip", "sigmoid", "erf", "erfinv", "outer", "ger",
        "matmul", "mm", "bmm", "einsum", "cumsum", "cumprod", "flip", "roll", "tril", "triu", "diag",
        "diag_embed", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "repeat_interleave",
        "sum", "mean", "prod", "minimum", "maximum", "add", "sub", "mul", "div", "true_divide", "floor_divide",
        "remainder", "fmod", "logical_not", "logical_and", "logical_or", "eq", "ne", "lt", "le", "gt", "ge",
    )
)
# The same for tensor methods (the receiver's memory space).
_SAME_PLACE_MATH_METHODS = frozenset(
    {"exp", "exp2", "log", "log2", "log1p", "sin", "cos", "tanh", "sqrt", "rsqrt", "square", "pow", "abs", "neg",
     "sign", "reciprocal", "floor", "ceil", "round", "clamp", "clamp_min", "clamp_max", "sigmoid", "cumsum",
     "cumprod", "flip", "roll", "tril", "triu", "diag", "sum", "mean", "prod", "add", "sub", "mul", "div",
     "masked_fill", "outer", "matmul", "mm", "bmm", "repeat_interleave", "exp_", "log_", "mul_", "add_",
     "sub_", "div_", "pow_", "clamp_", "masked_fill_", "tril_", "triu_", "logical_not"}
)
_TO_HOST_METHODS = frozenset({"pin_memory", "cpu"})
_NEXT_BATCH_METHODS = frozenset({"next_batch", "get_batch", "next"})
_DATA_ITERATOR = re.compile(r"loader|batches|iter", re.IGNORECASE)


def _is_literal(node: cst.BaseExpression) -> bool:
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.UnaryOperation:
        return _is_literal(node.expression)
    if type(node) in (cst.List, cst.Tuple):
        return all(_is_literal(e.value) for e in node.elements)
    return False


# NumPy's random draws and the position of their `size` argument: without a size they return one
# number (`np.random.choice(i_train)`), which indexes a tensor without any copy.
_NUMPY_SIZE_POSITION = {
    "choice": 1, "randint": 2, "uniform": 2, "normal": 2, "random": 0, "random_sample": 0, "integers": 2,
    "binomial": 2, "poisson": 1, "exponential": 1, "beta": 2, "gamma": 2,
}


def _is_view(node: cst.Subscript) -> bool:
    """`t[:, None]`, `t[1:]`, `t[..., None]`: basic indexing by slices of literal bounds, `None`
    and `...`, which views the tensor without dropping a dimension. (`t[0]` may be a 0-d tensor,
    which as an index is read on the host as a Python int, and copies nothing.)"""
    for element in node.slice:
        part = element.slice
        if type(part) is cst.Slice:
            bounds = (part.lower, part.upper, part.step)
            if any(bound is not None and type(bound) is not cst.Integer for bound in bounds):
                return False
        elif not ((type(part.value) is cst.Name and part.value.value == "None") or type(part.value) is cst.Ellipsis):
            return False
    return True


def _makes_an_array(call: cst.Call, qualified: str) -> bool:
    """A NumPy random call that returns an array, not a single number."""
    name = qualified.rsplit(".", 1)[-1]
    if name in ("rand", "randn"):
        return any(arg.keyword is None for arg in call.args)  # `rand(3, 4)`; `rand()` is a float
    if name in ("permutation", "shuffle"):
        return True
    if keyword_arg(call, "size") is not None or has_star_args(call):
        return True
    position = _NUMPY_SIZE_POSITION.get(name)
    return position is None or sum(1 for arg in call.args if arg.keyword is None) > position


class HostData(LambdaScopes, Tracker):
    """Names bound to host data, learned in walk order; functions and comprehensions are scopes."""

    def __init__(self, context: ModuleContext) -> None:
        super().__init__(context)
        self._imports: ImportTable = context.imports
        self._facts: NameFacts = context.facts
        self._scopes: list[dict[str, Origin | None]] = [{}]
        self._class_scopes: list[dict[str, Origin | None]] = []
        # `map(lambda t: t.cuda(), (x, y))`: the lambda's parameter takes each element in turn.
        self._mapped: dict[int, Origin | None] = {}

    def _open_scope(self) -> None:
        self._scopes.append({})

    def _close_scope(self) -> None:
        self._scopes.pop()

    def _open_class(self) -> None:
        self._class_scopes.append({})

    def _close_class(self) -> None:
        self._class_scopes.pop()

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`target = value`; tuples unpack element-wise, or all from one batch (`x, y = batch`)."""
        if type(target) in (cst.Tuple, cst.List):
            values = value.elements if type(value) in (cst.Tuple, cst.List) else None
            if values is not None and len(values) == len(target.elements):
                for element, item in zip(target.elements, values):
                    self.bind(element.value, item.value)
                return
            origin = self.origin_of(value)
            # `idx1, idx2 = perm[:2]`: the rows (or 0-d scalars) of a factory's tensor are host
            # data; a 0-d one indexes on the host as a Python int.
            self.bind_all(target, Origin.HOST if origin is Origin.FACTORY else origin)
            return
        self._set(target, self.origin_of(value))

    def bind_all(self, target: cst.BaseExpression, origin: Origin | None) -> None:
        """Every name in `target` takes `origin` (a loop target, an unpacked batch)."""
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self.bind_all(element.value, origin)
        elif type(target) is cst.StarredElement:
            self.bind_all(target.value, origin)
        else:
            self._set(target, origin)

    def origin_of(self, node: cst.BaseExpression) -> Origin | None:
        if type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            known = self._lookup(name) if name else None
            if known is not None or type(node) is cst.Name:
                return known
            return Origin.BATCH if self.origin_of(node.value) is Origin.BATCH else None
        if type(node) is cst.Subscript:
            inner = self.origin_of(node.value)
            if inner is Origin.FACTORY and _is_view(node):
                # `torch.arange(B)[:, None]`: a view of what the device could make itself.
                return inner
            return Origin.HOST if inner in (Origin.FACTORY, Origin.DATA) else inner
        if type(node) is cst.Call:
            return self._origin_of_call(node)
        if type(node) is cst.BinaryOperation:
            return self._origin_of_operands((node.left, node.right))
        if type(node) is cst.Comparison:
            return self._origin_of_operands((node.left, *(c.comparator for c in node.comparisons)))
        if type(node) is cst.UnaryOperation:
            return self._origin_of_operands((node.expression,))
        if type(node) is cst.IfExp:
            # `data = train_data if split == "train" else val_data`: one of the two, whichever runs.
            return self._origin_of_operands((node.body, node.orelse))
        return None

    def _origin_of_operands(self, operands) -> Origin | None:
        """Tensor arithmetic stays in the memory of its operands: only factory-made tensors (and
        literals) make a factory tensor (`labels.unsqueeze(0) == labels.unsqueeze(1)`), only one
        batch's parts a batch (`x / 255.0`), host data of several origins host data; one operand
        of unknown origin (a parameter, a device tensor) and the result is unknown."""
        origins = {self.origin_of(operand) for operand in operands if not self._is_number(operand)}
        if not origins or None in origins:
            return None
        if len(origins) == 1:
            return origins.pop()
        return Origin.HOST

    def _is_number(self, node: cst.BaseExpression) -> bool:
        """A Python number, not a tensor: a literal, a name the facts know holds a number, a
        `math` function's result, arithmetic of numbers (`-(math.log(10000) / half)`)."""
        while type(node) is cst.UnaryOperation:
            node = node.expression  # `-x` is a number when `x` is (peeled once: chains stay linear)
        if _is_literal(node) or self._facts.kind_of(node) is Kind.NUMBER:
            return True
        kind = type(node)
        if kind is cst.BinaryOperation:
            return self._is_number(node.left) and self._is_number(node.right)
        if kind is cst.Call:
            return (self._imports.call_name(node) or "").startswith("math.")
        return False

    def is_data_iterator(self, node: cst.BaseExpression) -> bool:
        """`loader`, `iter(loader)`, `train_iter`: something whose `next()` is a batch."""
        if type(node) is cst.Call and dotted_name(node.func) == "iter" and node.args:
            return self.is_data_iterator(node.args[0].value)
        name = dotted_name(node)
        return bool(name) and (bool(_DATA_ITERATOR.search(name)) or self._facts.kind_of(node) is Kind.DATALOADER)

    def _origin_of_call(self, call: cst.Call) -> Origin | None:
        qualified = self._imports.call_name(call) or ""
        if qualified in _LEGACY_TYPES and not self._is_a_shape(call) and not self._is_made_here(call):
            # `torch.FloatTensor(state)`: data put in a tensor, not a tensor the device could make
            # (`torch.FloatTensor([0.5])` of literals it could, as `torch.tensor([0.5])`).
            return Origin.DATA if self._made_on_host(call) else None
        if qualified in HOST_FACTORIES:
            if qualified in _FROM_DATA and not self._is_made_here(call):
                # `torch.tensor(reward)`: data of unknown origin (an environment's output, a
                # parameter) arrives on the host and must be copied; the device could not make it.
                return Origin.DATA if self._made_on_host(call) else None
            return Origin.FACTORY if self._made_on_host(call) else None
        if qualified in _FROM_HOST:
            if not self._made_on_host(call):
                return None
            first = positional_arg(call, 0)
            return Origin.FACTORY if first is not None and self.origin_of(first.value) is Origin.FACTORY else Origin.HOST
        if qualified in _NUMPY_FACTORIES or (qualified.startswith("numpy.random.") and _makes_an_array(call, qualified)):
            return Origin.FACTORY
        if qualified in JOINS:
            first = positional_arg(call, 0)
            return self._joined_origin(first.value) if first is not None else None
        if qualified in _SAME_PLACE_FUNCTIONS:
            operands = [
                arg.value for arg in call.args
                if arg.keyword is None and not arg.star and type(arg.value) not in (cst.SimpleString, cst.ConcatenatedString)
            ]
            return self._origin_of_operands(operands) if operands else None
        if dotted_name(call.func) == "next" and call.args and self.is_data_iterator(call.args[0].value):
            return Origin.BATCH
        method = method_name(call)
        # `train_loader.next_batch()`: a hand-written loader's batch, read from host memory.
        if method in _NEXT_BATCH_METHODS and self.is_data_iterator(receiver(call)):
            return Origin.BATCH
        if method in _TO_HOST_METHODS:
            return Origin.HOST
        if method in _SAME_PLACE_METHODS or (method in _SAME_PLACE_MATH_METHODS and not qualified.startswith("torch.")):
            return self.origin_of(receiver(call))
        return None

    def _is_made_here(self, call: cst.Call) -> bool:
        """`torch.tensor([1, 2])`, `torch.tensor(float(n))`, `torch.tensor(np.ones(k))`: literals,
        Python numbers or NumPy values computed in this code, which the device could make itself."""
        first = positional_arg(call, 0)
        if first is None:
            return False
        if _is_literal(first.value) or self._facts.kind_of(first.value) in (Kind.NUMBER, Kind.NUMPY):
            return True
        if type(first.value) is cst.Name:
            self.context.heat.note_dependency(first.value.value, "number")  # a number passed in decides
        return False

    def _is_a_shape(self, call: cst.Call) -> bool:
        """`torch.BoolTensor(x.size())`, `torch.LongTensor(n)`, `torch.FloatTensor(b, c)`: a legacy
        type called with a shape allocates; called with a list or an array it copies that data."""
        positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        if len(positional) > 1:
            return True
        if not positional:
            return False
        first = positional[0]
        if type(first) is cst.Integer or self._facts.kind_of(first) is Kind.NUMBER:
            return True
        if type(first) is cst.Call and type(first.func) is cst.Attribute and first.func.attr.value == "size":
            return True
        return type(first) is cst.Attribute and first.attr.value == "shape"

    def _made_on_host(self, call: cst.Call) -> bool:
        if has_star_args(call):
            return False
        device = keyword_arg(call, "device")
        return device is None or destination(device.value, self._imports) is False

    def _joined_origin(self, parts: cst.BaseExpression) -> Origin | None:
        """What `torch.stack(parts)` / `torch.cat(parts)` makes: host data when every part is on
        the host, a factory tensor when every part is one (the device could have made it too)."""
        if type(parts) in (cst.List, cst.Tuple):
            origins = [self.origin_of(e.value) for e in parts.elements]
            if not origins or None in origins:
                return None
            return Origin.FACTORY if all(origin is Origin.FACTORY for origin in origins) else Origin.HOST
        if type(parts) in (cst.ListComp, cst.GeneratorExp):
            element = self._element_of_comprehension(parts)
            return None if element is None else Origin.FACTORY if element is Origin.FACTORY else Origin.HOST
        return None if self.origin_of(parts) is None else Origin.HOST

    def _element_of_comprehension(self, node: cst.ListComp | cst.GeneratorExp) -> Origin | None:
        """`torch.stack([x[0] for x in batch[1]])`, asked once the comprehension's own scope is
        closed: its element with its targets bound again to what they iterate (parts of a batch)."""
        self._open_scope()
        try:
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                self.bind_all(clause.target, self.origin_of(clause.iter))
                clause = clause.inner_for_in
            return self.origin_of(node.elt)
        finally:
            self._close_scope()

    def _set(self, target: cst.BaseExpression, origin: Origin | None) -> None:
        name = dotted_name(target)
        if name is None:
            return
        scope = self._class_scopes[-1] if name.startswith("self.") and self._class_scopes else self._scopes[-1]
        # None is kept, not dropped: a local rebinding hides what an outer scope says.
        scope[name] = origin

    def _lookup(self, name: str) -> Origin | None:
        if name.startswith("self."):
            return self._class_scopes[-1].get(name) if self._class_scopes else None
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        # A parameter: the project pass binds what its call sites pass (a host batch or a batch
        # source decides; a name that reads as a loader is one already).
        if not _DATA_ITERATOR.search(name):
            self.context.heat.note_dependency(name, "origin")
        return None

    # Scopes follow the walk: functions, classes, and comprehensions (their targets are their own).
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._open_scope()
        # A parameter every visible call site passes a host batch to (`bindings.py`).
        function = self.context.heat.where().function
        for name, fact in function.bound if function is not None else ():
            if fact == BATCH:
                self._scopes[-1][name] = Origin.BATCH

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._close_scope()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._open_class()

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._close_class()

    def visit_For(self, node: cst.For) -> None:
        loop = self.context.heat.loop_where(node).innermost_loop
        from_data_source = loop is not None and loop.node is node and loop.data_source
        self.bind_all(node.target, Origin.BATCH if from_data_source else self.origin_of(node.iter))
        counter = _enumerate_counter(node)
        if counter is not None:
            self.bind_all(counter, None)  # `step` of `for step, batch in enumerate(loader)` counts

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bind_all(node.target, self.origin_of(node.iter))

    def visit_Call(self, node: cst.Call) -> None:
        if dotted_name(node.func) != "map" or len(node.args) != 2 or any(a.keyword or a.star for a in node.args):
            return
        function, iterable = node.args[0].value, node.args[1].value
        if type(function) is cst.Lambda and len(function.params.params) == 1:
            self._mapped[id(function)] = self._element_origin(iterable)

    def _element_origin(self, iterable: cst.BaseExpression) -> Origin | None:
        """The origin every element of `iterable` shares: the parts of a tuple or list written out
        (`(text, images)`), else what iterating it yields."""
        if type(iterable) in (cst.Tuple, cst.List):
            origins = {self.origin_of(element.value) for element in iterable.elements}
            return origins.pop() if len(origins) == 1 else None
        return self.origin_of(iterable)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        super().visit_Lambda(node)
        if id(node) in self._mapped:
            self._open_scope()
            self._set(node.params.params[0].name, self._mapped[id(node)])

    def leave_Lambda(self, node: cst.Lambda) -> None:
        if id(node) in self._mapped:
            self._close_scope()
            del self._mapped[id(node)]
        super().leave_Lambda(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.bind(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, node.value)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._open_scope()

    def leave_ListComp(self, node: cst.ListComp) -> None:
        self._close_scope()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._open_scope()

    def leave_SetComp(self, node: cst.SetComp) -> None:
        self._close_scope()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._open_scope()

    def leave_DictComp(self, node: cst.DictComp) -> None:
        self._close_scope()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._open_scope()

    def leave_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._close_scope()


class HostDataRule(Rule):
    """Base for the copy rules (VP102, VP104): reads the module's `HostData` as `self.host`."""

    def __init__(self, context: ModuleContext) -> None:
        super().__init__(context)
        self.host = context.tracker(HostData)


def _enumerate_counter(loop: cst.For) -> cst.BaseExpression | None:
    """The counter `enumerate` pairs with each element (`step` in `for step, batch in
    enumerate(tqdm(loader))` or `tqdm(enumerate(loader))`): a Python int, no part of a batch."""
    target = loop.target
    if type(target) not in (cst.Tuple, cst.List) or len(target.elements) != 2:
        return None
    iterable = loop.iter
    while type(iterable) is cst.Call:
        if dotted_name(iterable.func) == "enumerate":
            return target.elements[0].value
        if iterated_source(iterable) is iterable:
            return None
        iterable = positional_arg(iterable, 0).value
    return None
