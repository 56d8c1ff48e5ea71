"""Where a value lives: on the accelerator or in host memory, and the line that shows it.

The value premise of the sync and copy rules: reading a tensor on the host costs a device sync
only when the tensor is on the accelerator. Learned in walk order, per function (with `self.x`
kept per class), from evidence only:
- on the accelerator: `.to(device)` / `.cuda()` (a device that is not a CPU literal), a factory
  with `device=`, a module moved with `model.to(device)` (a call whose result is dropped moves a
  module in place), what `accelerator.prepare(...)` / `fabric.setup(...)` returns (a prepared
  loader yields device batches), the outputs of a module on the device, and torch math that
  involves a value on the device;
- in host memory: `.cpu()`, `.numpy()`, `.pin_memory()`, a factory without `device=`,
  `torch.from_numpy`, `torch.tensor(data)`, a batch from a plain DataLoader, and torch math on
  host values only.
Anything else is not known (None): the rules then only assume where it lives.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

import libcst as cst

from verifier.static.class_attributes import unsettled_attributes
from verifier.static.devices import destination
from verifier.static.facts import MODULE_STATE, Kind, NameFacts
from verifier.static.scopes import ScopedNames
from verifier.static.torch_api import MODULE_SELF_METHODS, returns_tensor
from verifier.static.walk import iter_descendants
from verifier.static.names import (
    CONFIG_ROOTS,
    ImportTable,
    dict_items,
    dotted_name,
    element_pairs,
    iterated_source,
    keyed_name,
    keyword_arg,
    listed_values,
    method_name,
    positional_arg,
    receiver,
)


class Place(enum.Enum):
    DEVICE = "on the accelerator"
    HOST = "in host memory"


@dataclass(frozen=True, eq=False)
class Placement:
    """Where a value lives and why it is known: `moved with `.to(device)``, at `node`."""

    place: Place
    why: str
    node: cst.CSTNode | None = None
    # Read off the arguments of a call whose result nothing shows (`compute_loss(out, y)` of
    # device tensors): likely there, but the result may as well be a number or a dict.
    guessed: bool = False


_HOST_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "tensor", "arange", "range", "linspace", "logspace", "eye", "rand",
        "randn", "randint", "randperm", "as_tensor", "from_numpy", "frombuffer", "normal", "bernoulli",
        # The legacy CPU tensor types: CPU memory whatever they are given (a CUDA tensor is refused).
        "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
        "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
    )
)
_TO_HOST_METHODS = frozenset({"cpu", "numpy", "pin_memory"})
# A tensor's description, not its values: known on the host without waiting for the device.
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "names"})
# Tensor methods that return a Python value: a description (`size()`), or the value read (`item()`).
_PYTHON_VALUE_METHODS = frozenset(
    {"size", "dim", "numel", "nelement", "element_size", "stride", "data_ptr", "is_contiguous", "get_device",
     "item", "tolist", "is_floating_point", "is_complex"}
)
# Tensor methods whose result is a tensor where the receiver is (reductions, tests, casts).
_TENSOR_RESULTS = frozenset(
    {"sum", "mean", "max", "min", "any", "all", "norm", "abs", "prod", "std", "var", "argmax", "argmin",
     "count_nonzero", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "logical_and",
     "logical_or", "logical_not", "clamp", "sigmoid", "softmax", "detach", "exp", "log", "sqrt", "float",
     "double", "half", "long", "bool", "amax", "amin", "nansum", "nanmean"}
)
# Methods of `_TENSOR_RESULTS` that an `nn.Module` has too (`model.half()` is the module).
_MODULE_METHODS = _TENSOR_RESULTS & MODULE_SELF_METHODS
# Builtins whose result is a Python value whatever their arguments are (`max`, `min`, `sum`,
# `abs`, `round` of tensors are tensors, and are not here).
_PYTHON_VALUE_BUILTINS = frozenset(
    {"len", "isinstance", "issubclass", "hasattr", "callable", "type", "id", "str", "repr", "format", "int",
     "float", "bool", "list", "tuple", "dict", "set", "frozenset", "sorted", "enumerate", "zip", "range", "print",
     "getattr", "vars", "dir", "hash", "ord", "chr"}
)
_MODULE_MOVES = frozenset({"to", "cuda"})
# Objects whose `prepare`/`setup` place what they return on the accelerator.
_PLACERS = frozenset({"accelerate.Accelerator", "lightning.fabric.Fabric", "lightning.Fabric", "lightning_fabric.Fabric"})
_PLACING_METHODS = frozenset({"prepare", "prepare_model", "prepare_data_loader", "setup", "setup_dataloaders"})
# Methods of a module whose tensors live where the module does.
_MODULE_TENSORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})


# Objects whose `.device` is the run's chosen device, not the place of a value: the configuration,
# `self`, and the launchers that pick the device.
_SETTINGS_ROOTS = CONFIG_ROOTS | {"self", "accelerator", "trainer", "fabric", "state", "dist_util", "distributed"}


class PlaceFacts:
    """Placements by name, in walk order; scopes as `NameFacts` keeps kinds."""

    def __init__(self, imports: ImportTable, facts: NameFacts) -> None:
        self._imports = imports
        self._facts = facts
        self._names: ScopedNames[Placement] = ScopedNames()
        # Names bound to an Accelerator or a Fabric (their `prepare` places what it returns), per
        # function and, for `self.` names, per class.
        self._placers: list[set[str]] = [set()]
        self._class_placers: list[set[str]] = []
        # Per open class, its node and, once asked, the `self.` attributes whose bindings disagree
        # across methods (`class_attributes.py`); per open function, the `self.` attributes it
        # bound itself.
        self._classes: list[cst.ClassDef | None] = []
        self._unsettled: list[frozenset[str] | None] = []
        self._bound_here: list[set[str]] = [set()]
        # The string-keyed items each name was last given by a dict literal (`_bind_items`).
        self._keys: dict[str, set[str]] = {}

    # ----- scopes -----

    def enter_function(self) -> None:
        self._names.enter_function()
        self._placers.append(set())
        self._bound_here.append(set())

    def leave_function(self) -> None:
        self._names.leave_function()
        self._placers.pop()
        self._bound_here.pop()

    def seed(self, name: str, placement: Placement) -> None:
        """A parameter of the function just entered is where every visible call site put it."""
        self._names.set(name, placement)

    def enter_class(self, node: cst.ClassDef | None = None) -> None:
        self._names.enter_class()
        self._class_placers.append(set())
        self._classes.append(node)
        self._unsettled.append(None)

    def leave_class(self) -> None:
        self._names.leave_class()
        self._class_placers.pop()
        self._classes.pop()
        self._unsettled.pop()

    # ----- recording -----

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if type(target) in (cst.Tuple, cst.List):
            pairs = element_pairs(target, value)
            if pairs is not None:
                for element, item in pairs:
                    self.bind(element, item)
                return
            returned = self._facts.returned_by(value, "tensor") if type(value) is cst.Call else None
            if returned is not None and returned[0] == "tuple" and len(returned) == len(target.elements) + 1:
                # `errD, errG = train_step()`: each where that position of every return lives.
                callee = dotted_name(value.func) or "it"
                shown = {
                    ("tensor", "device"): Placement(Place.DEVICE, f"returned on the accelerator by `{callee}`", value),
                    ("tensor", "host"): Placement(Place.HOST, f"returned in host memory by `{callee}`", value),
                }
                for element, fact in zip(target.elements, returned[1:]):
                    self._unpacked(element.value, shown.get(fact))
                return
            # `model, opt, loader = accelerator.prepare(model, opt, loader)`, `logits, loss = model(x)`.
            placement = self.placement_of(value) if value is not None else None
            for element in target.elements:
                inner = element.value
                self.bind(inner, None) if type(element) is cst.StarredElement else self._unpacked(inner, placement)
            return
        if type(target) is cst.StarredElement:
            self._set(target.value, None)
            return
        if type(target) is cst.Subscript and keyed_name(target) is None:
            self._store_item(target.value, value)
            return
        name = dotted_name(target)
        if name is not None:
            placers = self._class_placers[-1] if name.startswith("self.") and self._class_placers else self._placers[-1]
            if value is not None and self._makes_placer(value):
                placers.add(name)
            else:
                placers.discard(name)
        if value is not None and type(value) is cst.Call and iterated_source(value) is not value:
            # `bar = tqdm(loader)`: iterating the bar yields the loader's batches, where they live.
            self._set(target, self._element_placement(value))
        else:
            self._set(target, self.placement_of(value) if value is not None else None)
        if name is not None:
            self._bind_items(name, value)

    def _store_item(self, container: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """`images[0] = images[0].cuda()`: a part of a batch moved, the rest where it was; the
        container lives in one place only while what is stored in it lives there too. A tensor is
        no such container: storing into it copies the value to where the tensor lives."""
        if dotted_name(container) is None or self._facts.kind_of(container) is Kind.TENSOR:
            return  # `scores[i] = score`: a tensor stays where it was made; the value is copied in
        before = self.placement_of(container)
        now = self.placement_of(value) if value is not None else None
        if before is not None and now is not None and now.place is not before.place:
            self._set(container, None)  # `logits[mask] = 0` stores a number: the container stays

    def _bind_items(self, name: str, value: cst.BaseExpression | None) -> None:
        """`out = {"loss": loss}`: `out["loss"]` lives where `loss` does (see `NameFacts`)."""
        for key in self._keys.pop(name, ()):
            self._names.forget(key)
        for key, item in dict_items(value) or ():
            placement = self.placement_of(item)
            if placement is not None:
                keyed = f"{name}[{key!r}]"
                self._names.set(keyed, placement)
                self._keys.setdefault(name, set()).add(keyed)

    def bind_in_place(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x += v`: where `x + v` would be."""
        self._set(target, _joined(*map(self.placement_of, self._tensor_operands(target, value))))

    def _unpacked(self, target: cst.BaseExpression, placement: Placement | None) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._unpacked(element.value, placement)
        else:
            self._set(target, placement)

    def bind_loop(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for p in model.parameters()`: the module's place; `for x, y in loader`: a batch."""
        self._unpacked(target, self._element_placement(iterable))

    def on_statement(self, node: cst.Expr) -> None:
        """`model.to(device)` / `model.cuda()` as a statement: the result is dropped, so it moves a
        module in place (a tensor's `.to()` returns a copy and changes nothing)."""
        call = node.value
        if type(call) is not cst.Call or method_name(call) not in _MODULE_MOVES:
            return
        owner = receiver(call)
        if owner is None or type(owner) not in (cst.Name, cst.Attribute):
            return
        moved = self._moved(call)
        if moved is not None:
            self._set(owner, moved)

    # ----- asking -----

    def computes_on_device(self, node: cst.BaseExpression) -> bool:
        """A tensor computed on the accelerator: a tensor method or torch function applied to a
        value shown there (not one guessed from a call's arguments), as in `fg_mask.sum()` with
        `fg_mask` returned there by an assigner module. A value's place alone does not make it a
        tensor: `step` from `enumerate(loader)`, `model.mode`, `input.is_xpu` sit beside device
        values without being tensors."""
        return any(
            type(part) is cst.Call and self._tensor_call_on_device(part) for part in (node, *iter_descendants(node))
        )

    def makes_device_tensor(self, node: cst.BaseExpression) -> bool:
        """`num_pos = gt.eq(1).float().sum()` with `gt` shown on the accelerator: a method only
        tensors have, called on a value shown there, gives a tensor there, so a name bound to it
        is one (`.float()`, `.half()`, `.double()` are modules' methods too)."""
        return (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in _TENSOR_RESULTS
            and node.func.attr.value not in _MODULE_METHODS
            and self._tensor_call_on_device(node)
        )

    def _tensor_call_on_device(self, call: cst.Call) -> bool:
        qualified = self._imports.call_name(call) or ""
        operand: cst.BaseExpression | None = None
        if qualified.startswith("torch.") and returns_tensor(qualified):
            # `torch.isnan(t)`; not `torch.is_tensor(t)` or `torch.numel(t)`, Python values.
            argument = positional_arg(call, 0)
            operand = argument.value if argument is not None else None
        elif type(call.func) is cst.Attribute and call.func.attr.value in _TENSOR_RESULTS:
            operand = call.func.value
        if operand is None:
            return False
        placement = self.placement_of(operand)
        return placement is not None and placement.place is Place.DEVICE and not placement.guessed

    def placement_of(self, node: cst.BaseExpression) -> Placement | None:
        kind = type(node)
        if kind is cst.Attribute and node.attr.value in _METADATA:
            return None  # `x.shape`, `x.dtype`: what a tensor is, held on the host
        if kind is cst.Name or kind is cst.Attribute:
            name = dotted_name(node)
            if name is not None:
                found = self._lookup(name)
                if found is not None or kind is cst.Name:
                    return found
            return self.placement_of(node.value) if kind is cst.Attribute else None
        if kind is cst.Subscript:
            keyed = keyed_name(node)
            found = self._lookup(keyed) if keyed is not None else None
            return found if found is not None else self.placement_of(node.value)
        if kind is cst.Call:
            return self._of_call(node)
        if kind is cst.BinaryOperation:
            return _joined(*map(self.placement_of, self._tensor_operands(node.left, node.right)))
        if kind is cst.UnaryOperation:
            return self.placement_of(node.expression)
        if kind is cst.IfExp:
            # `x = a if train else b`: where it lives only when both branches live there.
            body, orelse = self.placement_of(node.body), self.placement_of(node.orelse)
            return body if body is not None and orelse is not None and body.place is orelse.place else None
        if kind is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in node.comparisons):
                return None  # `stats is None`, `"aux" in outputs`: a Python bool, whatever the operands
            sides = self._tensor_operands(node.left, *(c.comparator for c in node.comparisons))
            placements = [self.placement_of(side) for side in sides]
            joined = _joined(*placements)
            if joined is None and (host := self._compared_on_host(sides, placements)) is not None:
                return host
            return joined
        return None

    def _compared_on_host(
        self, sides: list[cst.BaseExpression], placements: list[Placement | None]
    ) -> Placement | None:
        """`(query[i] != self.tokenizer.pad_token_id)` with `query` in host memory: a host tensor
        compared with values not known to be tensors is a host mask. Only a 0-dim host tensor mixes
        with a device tensor, and such a scalar is not what code compares a tensor of ids or
        scores against; arithmetic is left alone (a CPU step counter times device state is
        torch's own optimizers' idiom)."""
        host = next((p for p in placements if p is not None and p.place is Place.HOST), None)
        if host is None:
            return None
        unknown = [side for side, placement in zip(sides, placements) if placement is None]
        if any(self._facts.kind_of(side) is Kind.TENSOR for side in unknown):
            return None
        return host

    def _is_setting(self, node: cst.BaseExpression) -> bool:
        """`dim=1`, `keepdim=True`, `"mean"`, `dtype=torch.float16`, `eps=1e-6`: an argument that is
        no tensor, so it says nothing of where the result lives."""
        kind = type(node)
        if kind in (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
            return True
        if kind is cst.Name and node.value in ("True", "False", "None"):
            return True
        if kind is cst.Attribute and (self._imports.qualified_name(node) or "").startswith("torch."):
            return True  # `torch.float16`, `torch.long`: a dtype
        if kind is cst.UnaryOperation and type(node.expression) in (cst.Integer, cst.Float):
            return True  # `dim=-1`
        return self._facts.kind_of(node) is Kind.NUMBER

    def _tensor_operands(self, *operands: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The operands that may be tensors: `loss * x.size(0)` is where `loss` is."""
        kept = [
            operand for operand in operands
            if type(operand) not in (cst.Integer, cst.Float)
            and self._facts.kind_of(operand) is not Kind.NUMBER
            and not self._read_off_a_tensor(operand)
        ]
        return kept or list(operands)

    def _read_off_a_tensor(self, node: cst.BaseExpression) -> bool:
        """`x.size(-1)`, `x.shape[0]`, `x.ndim`, `len(x)`: a Python value describing a tensor, held
        on the host wherever the tensor is (`torch.rand(1) * x.size(-1)` is where `torch.rand(1)` is)."""
        kind = type(node)
        if kind is cst.Subscript:
            node, kind = node.value, type(node.value)
        if kind is cst.Attribute:
            return node.attr.value in _METADATA
        if kind is not cst.Call or self._imports.call_name(node):
            return False
        if method_name(node) in _PYTHON_VALUE_METHODS and receiver(node) is not None:
            return True
        return dotted_name(node.func) in _PYTHON_VALUE_BUILTINS

    def _of_call(self, call: cst.Call) -> Placement | None:
        qualified = self._imports.call_name(call) or ""
        method = method_name(call)
        owner = receiver(call)
        if self._read_off_a_tensor(call):
            return None  # `x.size(0)`, `t.item()`, `len(p)`, `float(t)`: a Python value, on no device
        if method in _MODULE_MOVES and owner is not None:
            return self._moved(call) or self.placement_of(owner)
        if method in _TO_HOST_METHODS:
            return Placement(Place.HOST, f"made on the host by `.{method}()`", call)
        if qualified in MODULE_STATE:
            return None  # a parameter or buffer goes where its module is moved, later
        if qualified in _HOST_FACTORIES or (qualified.startswith("torch.") and qualified.endswith("_like")):
            return self._factory(call, qualified)
        if method in _PLACING_METHODS and owner is not None and self._is_placer(owner):
            return Placement(Place.DEVICE, f"placed by `{dotted_name(owner) or 'it'}.{method}(...)`", call)
        if method in _MODULE_TENSORS and owner is not None:
            return self.placement_of(owner)
        # `torch.cat((a, b), 1)`: the tensors of a tuple or list argument are arguments too.
        arguments = [
            value for arg in call.args if not arg.star for value in listed_values(arg.value)
            if not self._is_setting(value) and not self._read_off_a_tensor(value)
        ]
        # Something called that was moved to the device is a module (a tensor cannot be called):
        # its outputs live with its parameters. So do those of a part of it (`model.encoder(x)`).
        module = self._callee_placement(call.func)
        if module is not None and module.place is Place.DEVICE:
            return Placement(Place.DEVICE, f"the output of `{dotted_name(call.func)}`, which is {module.why}", module.node)
        returned = self._facts.returned_by(call, "tensor")
        if returned == ("tensor", "device"):
            # The project's own function, whose every `return` gives a tensor on the accelerator.
            return Placement(Place.DEVICE, f"returned on the accelerator by `{dotted_name(call.func) or 'it'}`", call)
        if returned == ("tensor", "host"):
            # ... or in host memory (made there, or math on what every caller passes from there).
            return Placement(Place.HOST, f"returned in host memory by `{dotted_name(call.func) or 'it'}`", call)
        if owner is not None and method is not None and not qualified:
            # A tensor method keeps its receiver's place (`loss.detach()`, `x.float()`).
            return _joined(self.placement_of(owner), *map(self.placement_of, arguments))
        if qualified.startswith("torch."):
            return _joined(*map(self.placement_of, arguments))
        if not qualified:
            joined = _joined(*map(self.placement_of, arguments))
            return replace(joined, guessed=True) if joined is not None and joined.place is Place.DEVICE else joined
        return None

    def _callee_placement(self, func: cst.BaseExpression) -> Placement | None:
        """Where a called thing was put: bound itself (`model`, `self.net`), or a part of a known
        module (`model.encoder`); never the object a method is looked up on (`x.sum`)."""
        name = dotted_name(func)
        if name is None:
            return None
        found = self._lookup(name)
        if found is None and type(func) is cst.Attribute and self._facts.kind_of(func.value) is Kind.MODULE:
            found = self.placement_of(func.value)
        return found

    def _factory(self, call: cst.Call, qualified: str) -> Placement | None:
        device = keyword_arg(call, "device")
        if device is not None:
            where = destination(device.value, self._imports)
            if where is None:
                return None
            place = Place.DEVICE if where else Place.HOST
            return Placement(place, f"made by `{qualified}(..., device=...)`", call)
        if qualified.endswith("_like"):
            first = positional_arg(call, 0)
            return self.placement_of(first.value) if first is not None else None
        if qualified == "torch.as_tensor":
            first = positional_arg(call, 0)
            if first is not None and self._facts.kind_of(first.value) is Kind.TENSOR:
                return self.placement_of(first.value)
        return Placement(Place.HOST, f"made on the host by `{qualified}(...)` without `device=`", call)

    def _moved(self, call: cst.Call) -> Placement | None:
        """The place `.to(...)` / `.cuda()` sends its receiver to; None for a dtype cast or an unknown target."""
        if method_name(call) == "cuda":
            return Placement(Place.DEVICE, "moved with `.cuda()`", call)
        target = keyword_arg(call, "device") or positional_arg(call, 0)
        if target is None:
            return None
        follows = self._device_of_a_value(target.value)
        if follows is not None:
            # `.to(other.device)`: wherever `other` lives, which says nothing by itself.
            found = self.placement_of(follows)
            if found is None:
                return None
            return Placement(found.place, f"moved to where `{dotted_name(follows) or 'its source'}` lives", call)
        where = destination(target.value, self._imports)
        if where is None:
            return None
        if not where:
            # `.to("cpu")` moves to the host; `.to(torch.float16)` keeps the place (unknown here).
            text = target.value
            return Placement(Place.HOST, "moved to the host", call) if type(text) is cst.SimpleString else None
        return Placement(Place.DEVICE, "moved with `.to(device)`", call)

    def _device_of_a_value(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        """`x.device` where `x` is a value (a tensor, a module), not a setting (`args.device`,
        `self.device`, `accelerator.device`): the value whose place the device follows."""
        if type(target) is not cst.Attribute or target.attr.value != "device":
            return None
        owner = target.value
        root = (dotted_name(owner) or "").split(".", 1)[0]
        if not root or root in _SETTINGS_ROOTS or (self._imports.qualified_name(owner) or "").startswith("torch."):
            return None
        return owner

    def _element_placement(self, iterable: cst.BaseExpression) -> Placement | None:
        if type(iterable) is cst.Call:
            method = method_name(iterable)
            owner = receiver(iterable)
            if method in _MODULE_TENSORS and owner is not None:
                return self.placement_of(owner)
            if (dotted_name(iterable.func) or "") == "zip" and iterable.args:
                return _joined(*(self._element_placement(arg.value) for arg in iterable.args if not arg.star))
            source = iterated_source(iterable)
            if source is not iterable:
                # `enumerate(loader, 1)` counts on the host; `tqdm(enumerate(loader))` yields the loader's batches.
                return self._element_placement(source)
            if method in ("items", "values") and owner is not None:
                return self.placement_of(owner)  # the entries of a batch dict live where the batch does
            return None
        found = self.placement_of(iterable)
        if found is not None:
            return found
        if self._facts.kind_of(iterable) is Kind.DATALOADER:
            return Placement(Place.HOST, f"a batch from the DataLoader `{dotted_name(iterable)}`", iterable)
        return None

    def _makes_placer(self, value: cst.BaseExpression) -> bool:
        return type(value) is cst.Call and (self._imports.call_name(value) or "") in _PLACERS

    def _is_placer(self, owner: cst.BaseExpression) -> bool:
        name = dotted_name(owner)
        if name is None:
            return False
        if name.startswith("self.") and self._class_placers:
            return name in self._class_placers[-1]
        return any(name in placers for placers in self._placers)

    def _set(self, target: cst.BaseExpression, placement: Placement | None) -> None:
        name = dotted_name(target) or keyed_name(target)
        if name is None:
            return
        if name.startswith("self."):
            self._bound_here[-1].add(name.split(".", 2)[1])
        self._names.set(name, placement)

    def contested(self, node: cst.BaseExpression) -> bool:
        """`self.steps` (or a value computed from it, `self.steps < n`) where another method binds
        the attribute otherwise (a registered buffer, a host factory): its place here is unknown."""
        for part in iter_descendants(node) if type(node) is not cst.Attribute else ():
            if type(part) is cst.Attribute and self.contested(part):
                return True
        name = dotted_name(node) if type(node) is cst.Attribute else None
        return name is not None and self._unsettled_here(name)

    def _unsettled_here(self, name: str) -> bool:
        """`self.<attribute>...` that another method of the open class binds otherwise, and the
        function being walked did not bind itself (the class is scanned once, when first asked)."""
        if not name.startswith("self.") or not self._classes:
            return False
        attribute = name.split(".", 2)[1].split("[", 1)[0]
        if attribute in self._bound_here[-1]:
            return False
        if self._unsettled[-1] is None:
            node = self._classes[-1]
            self._unsettled[-1] = unsettled_attributes(node) if node is not None else frozenset()
        return attribute in self._unsettled[-1]

    def _lookup(self, name: str) -> Placement | None:
        found = self._names.lookup(name)
        if found is not None and self._unsettled_here(name):
            return None  # another method binds it otherwise: where it is here is not known
        return found


def _joined(*placements: Placement | None) -> Placement | None:
    """Math on values: on the device if any is; in host memory only if every one is known to be."""
    known = [p for p in placements if p is not None]
    device = next((p for p in known if p.place is Place.DEVICE), None)
    if device is not None:
        return device
    if known and len(known) == len(placements):
        return known[0]
    return None
