"""Call binding: what call sites pass to a function's parameters, across modules.

A value's fact often lives in another function: `all_reduce_mean(loss.item())` passes a Python
number, `TrainLoop(data=load_data(...))` a generator over a DataLoader, `train_one_epoch(model,
criterion)` an instance of the project's `SetCriterion`. During the engine's single walk each call
site records the *terms* of its arguments (small tuples, no syntax nodes): a known fact (a number,
a host batch, a batch source, an instance of a class) or a reference to be read later (a parameter
of the caller, the result of a call, an element of an iteration, a part of a tuple, an attribute
that `__init__` stored). Functions record the terms they return or yield; classes their bases and
their `__init__` attributes.

The project pass (`bind_project`) evaluates the terms over every analysed module. A parameter
takes a fact only when every visible call site passes that same fact; one unknown or different
argument, `*args`, or no call site at all leaves it unknown. A call through a receiver whose class
is then known (`self.sampler.sample(...)`, `criterion(outputs)`) is bound to that class's method,
looked up through its bases, and so is `obj.method()` where the method is inherited: heat follows.
The facts are handed to a re-analysis of the callee's file, which starts its parameters with them.
"""

from __future__ import annotations

import builtins
import collections
import itertools
from collections.abc import Callable, Iterator

import libcst as cst

from verifier.findings import Heat
from verifier.static.caller_branches import LITERAL, LITERAL_NAMES, would_change
from verifier.static.facts import TENSOR_METHODS, Kind, NameFacts, reads_a_size
from verifier.static.heat import (
    LIBRARY_ROOTS, CallSite, ClassSummary, FunctionInfo, HeatModel, another_target, attribute_of_getattr, defined_once,
    defined_under, project_reexports, through_reexports, unrooted,
)
from verifier.static.local_names import target_names
from verifier.static.names import ImportTable, dotted_name, listed_values, method_name
from verifier.static.places import Place
from verifier.static.transfers import device_move
from verifier.static.torch_api import MODULE_SELF_METHODS

# Facts a parameter can be bound to. A batch source is what `next()` or a `for` reads host
# batches from (a DataLoader, a generator over one); a host batch is one such batch or a part of it.
NUMBER = ("number",)
SOURCE = ("source",)
BATCH = ("batch",)
# A tensor, and a tensor shown on the accelerator (`places.py`): `log_loss(loss)` hands one in.
TENSOR = ("tensor",)
DEVICE_TENSOR = ("tensor", "device")
# A tensor shown in host memory (`places.py`: a factory without `device=`, `.cpu()`, a loader's
# batch, math on those): `iou(gt_boxes, anchors)` of host boxes gives a host tensor back.
HOST_TENSOR = ("tensor", "host")
# A list that lives for the whole run (`run_lists.py`): `train_step(..., history)` grows it.
RUN_LIST = ("list", "run")
# A value every caller read into Python just before the call (`host_reads.py`); held beside
# the parameter's other fact.
READ = ("read",)
# The facts a re-analysis starts parameters with; instances only steer calls (heat).
SEEDED = frozenset({NUMBER, SOURCE, BATCH, TENSOR, DEVICE_TENSOR, HOST_TENSOR, RUN_LIST, READ})
# The facts a function's read of a global starts with (a run-long list is known from the text).
_GLOBAL_FACTS = SEEDED - {RUN_LIST, READ}
# Tags of terms that are facts as they stand (`_Project.value` returns them unchanged).
_FACTS = frozenset({"number", "source", "batch", "tensor", "list", LITERAL})
# Terms that may stand for an object whose methods the project defines (`self.model`, a
# parameter, a name bound to an instance): the receivers of a method named without a call.
_RECEIVER_TERMS = frozenset({"attr", "param", "instance", "self", "result", "either", "item", "element"})

_BUILTINS = frozenset(dir(builtins))
# Terms math can be done on: tensors, batches, and what the project pass may find one to be.
_TENSOR_TERMS = frozenset({"tensor", "batch", "param", "result", "attr", "part", "item", "element", "or", "joined", "module"})
# torch functions whose result is not math on their tensors (it is made, moved or described).
_NOT_MATH = ("torch.cuda.", "torch.distributed.", "torch.utils.", "torch.nn.", "torch.optim.", "torch.backends.")
# Methods whose result is no tensor at all (an array, a list, a number).
_LEAVES_TENSORS = frozenset({"numpy", "tolist", "item"})
# Tensor methods whose result is a tensor in host memory.
_HOST_TENSOR_METHODS = frozenset({"cpu", "pin_memory"})
# Tensor methods whose result lives where the receiver does (`.cuda()`, `.to()`, `.type_as()`
# move it).
_PLACE_KEEPING_METHODS = (TENSOR_METHODS | {
    "expand_as", "view_as", "reshape_as", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
    "floor", "ceil", "round", "neg", "sign", "log1p", "exp", "narrow", "select", "flip", "roll", "where", "split",
    "chunk", "unbind", "sort", "topk", "masked_select", "nonzero", "unique", "repeat_interleave",
}) - {"to", "cuda", "type_as"}
# Methods that return the module they are called on, moved or switched (`Net().cuda()`).
_MODULE_MOVES = MODULE_SELF_METHODS
# Wrappers whose call runs the wrapped module's forward.
_MODULE_WRAPPERS = frozenset({"compile", "DistributedDataParallel", "DataParallel", "FullyShardedDataParallel", "DDP", "FSDP"})
# Calls into these packages never reach project code: their arguments are not recorded.
_LIBRARIES = LIBRARY_ROOTS | frozenset(
    {"re", "json", "logging", "random", "functools",
     "itertools", "collections", "typing", "copy", "pathlib", "argparse", "subprocess", "pickle", "warnings",
     "transformers", "datasets", "wandb", "tqdm", "PIL", "scipy", "sklearn", "pandas", "jax", "gym",
     "gymnasium", "torchvision", "timm", "accelerate", "lightning", "pytorch_lightning", "dataclasses"}
)


# Methods of tensors, containers, strings and loggers: a receiver's call of one of these is not
# bound to a project class (it would be a tensor's `.size()` far more often than anything else).
_COMMON_METHODS = frozenset(
    {"size", "numel", "dim", "stride", "item", "tolist", "numpy", "cpu", "chunk", "split", "narrow",
     "items", "keys", "values", "get", "append", "extend", "pop", "clear", "add", "set", "update",
     "insert", "remove", "copy", "sort", "index", "count", "join", "format", "lower", "upper", "strip",
     "startswith", "endswith", "replace", "encode", "decode",
     "info", "debug", "warning", "warn", "error", "exception", "critical", "log", "add_argument"}
) | TENSOR_METHODS


class Bindings:
    """The walk-time recorder: names to terms per function, argument terms per call site."""

    def __init__(
        self,
        heat: HeatModel,
        facts: NameFacts,
        is_host_batch: Callable[[cst.BaseExpression], bool],
        place_of: Callable[[cst.BaseExpression], Place | None] = lambda node: None,
        run_lists: frozenset[str] = frozenset(),
        read_before: Callable[[str], bool] = lambda name: False,
        imports: ImportTable | None = None,
    ) -> None:
        self._heat = heat
        self._facts = facts
        self._is_host_batch = is_host_batch
        # Where the walk shows a value lives (`places.py`), None when it does not.
        self._place_of = place_of
        # Was this name read into Python earlier in the block (`host_reads.py`)?
        self._read_before = read_before
        self._imports = imports if imports is not None else ImportTable()
        # Module-level lists that live for the whole run (`run_lists.py`).
        self._run_lists = run_lists
        self._envs: list[dict[str, tuple]] = [{}]
        self._functions: list[FunctionInfo | None] = [None]
        # Class bodies open outside functions: their names are the class's, not the module's.
        self._class_depth = 0

    # ----- scopes -----

    def enter_function(self, function: FunctionInfo) -> None:
        self._envs.append({})
        self._functions.append(function)

    def leave_function(self) -> None:
        self._envs.pop()
        self._functions.pop()

    def enter_class(self) -> None:
        self._class_depth += 1

    def leave_class(self) -> None:
        self._class_depth -= 1

    # ----- the module's own names, as its functions read them -----

    def note_module_binding(self, target: cst.BaseExpression) -> None:
        """Called once every tracker has taken a statement's binding: at module level, what a read
        of each name the target binds now gives (`HeatModel.module_globals`). A function that reads
        the name as a global reads one of these values, whichever binding ran last."""
        if len(self._envs) > 1 or self._class_depth:
            return
        for name in target_names(target):
            self._heat.note_global(name.value, self.term_of(name))

    def note_module_name(self, name: str, declared_global: bool = False) -> None:
        """A module-level `def`/`class` of `name`, or (`declared_global`) a function's `global
        name`, which may rebind it to anything: the global's value is not known."""
        if declared_global or (len(self._envs) == 1 and self._class_depth == 0):
            self._heat.note_global(name, None)

    # ----- statements -----

    def on_assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """After the walk's facts took the assignment: a plain target's kind is looked up, not
        computed again from the value."""
        simple = len(targets) == 1 and type(targets[0]) in (cst.Name, cst.Attribute)
        term = (self._known(targets[0]) or self.term_of(value, concrete=False)) if simple else self.term_of(value)
        for target in targets:
            self._bind(target, value, term)

    def on_aug_assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`x += v` binds `x` to what `x + v` is: a number added to a value leaves its term (`0 +
        loss` is the loss, `step + 1` a number); two values that are not numbers make a term the
        bindings do not model, so the name is unknown rather than still its first value."""
        if type(target) not in (cst.Name, cst.Attribute):
            return
        old, added = self.term_of(target), self.term_of(value)
        if self._known(target) == NUMBER or added == NUMBER:
            term = old
        elif old == NUMBER:
            term = added
        else:
            term = None
        self._bind(target, value, term)

    def on_for(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        self._bind(target, None, self._element_of(iterable))

    def on_return(self, value: cst.BaseExpression | None) -> None:
        function = self._functions[-1]
        if function is not None:
            function.results.append(self.term_of(value) if value is not None else None)

    def on_yield(self, node: cst.Yield) -> None:
        function = self._functions[-1]
        if function is None:
            return
        if type(node.value) is cst.From:
            function.yields.append(self._element_of(node.value.item))
        else:
            function.yields.append(self.term_of(node.value) if node.value is not None else None)

    def on_call(self, call: cst.Call, site: CallSite | None) -> None:
        """Record the argument terms of a call to something the project may define."""
        if site is None or (type(call.func) is cst.Name and call.func.value in _BUILTINS and site.via is None):
            return
        if unrooted(site.callee).split(".", 1)[0] in _LIBRARIES:
            return
        func = attribute_of_getattr(call.func) or call.func  # `getattr(runner, "log")(loss)` is `runner.log(loss)`
        site.through_instance = type(func) is cst.Attribute and not _names_a_class(func.value)
        args = []
        read = []
        passed = []
        for index, arg in enumerate(call.args):
            if arg.star:
                site.starred = True
                continue
            slot = arg.keyword.value if arg.keyword is not None else index
            passed.append(slot)
            term = literal_term(arg.value) or self.term_of(arg.value)
            if term is not None:
                args.append((slot, term))
            name = dotted_name(arg.value)
            if name is not None and self._read_before(name):
                read.append(slot)
        site.args = tuple(args)
        site.read_args = tuple(read)
        site.passed = tuple(passed)

    def via_of(self, call: cst.Call) -> tuple | None:
        """`self.sampler.sample(...)`, `model.step(...)`, `criterion(...)`: the receiver's term
        and the method called, when the receiver is a parameter or an attribute of `self`."""
        func = attribute_of_getattr(call.func) or call.func
        if type(func) is cst.Attribute:
            owner = func.value
            if type(owner) is cst.Name and owner.value == "self":
                # `self.method()` the heat model names; `self.encoder(x)` calls what the
                # attribute holds (a submodule's forward) when no method has that name.
                term = self._symbolic(func)
                return (term, "__call__") if term is not None else None
            if func.attr.value in _COMMON_METHODS:
                return None  # a `.size()` is no project method
            term = self._symbolic(owner)
            return (term, func.attr.value) if term is not None else None
        if type(func) is cst.Name:
            term = self._symbolic(func)
            return (term, "__call__") if term is not None else None
        if type(func) is cst.Subscript and type(func.value) in (cst.Name, cst.Attribute):
            # `score[self.model_name](head, tail)`: an entry of a dispatch table of functions.
            term = self._symbolic(func.value)
            return (term, "__call__") if term is not None else None
        return None

    # ----- terms -----

    def term_of(self, node: cst.BaseExpression, concrete: bool = True) -> tuple | None:
        """`concrete` False: the walk's own facts about `node` are known to say nothing."""
        kind = type(node)
        if kind in (cst.Integer, cst.Float) or reads_a_size(node):
            return NUMBER
        if kind in (cst.Name, cst.Attribute):
            known = concrete and self._known(node)
            if known and known != HOST_TENSOR:
                return known
            symbolic = self._symbolic(node)
            if symbolic is not None and symbolic[0] in _FACTS:
                return symbolic  # a fact already: nothing the walk knows could replace it
            # In host memory, the walk shows; what it is bound to may say more (a loader's batch).
            tensor = HOST_TENSOR if known else self._tensor(node) if concrete else None
            if symbolic is not None and tensor is not None:
                # `logits, loss = model(x, y)`: what the project pass finds, else the tensor the
                # walk knows (`loss.backward()` ran on it).
                return _bounded(("or", symbolic, tensor))
            return symbolic or self._function(node) or tensor or self._method_reference(node)
        if kind is cst.Call:
            return self._term_of_call(node, concrete)
        if kind is cst.Subscript:
            inner = self.term_of(node.value)
            if inner is not None and inner[0] == "part":
                return inner  # a part of a part is a part: `x[0][0]...[0]` stays one level deep
            return _bounded(("part", inner)) if inner is not None else self._known(node) if concrete else None
        if kind is cst.Tuple:
            terms = tuple(self.term_of(e.value) if type(e) is cst.Element else None for e in node.elements)
            return _bounded(("tuple", *terms)) if any(t is not None for t in terms) else None
        if kind is cst.List and node.elements:
            # `hooks = [log_step, check_nan]`: a list of callbacks a loop over it calls in turn.
            members = [self._function(e.value) if type(e) is cst.Element else None for e in node.elements]
            return _functions(members) if all(m is not None for m in members) else None
        if kind is cst.Dict and node.elements:
            # `score = {"TransE": self.TransE, "RotatE": self.RotatE}`: a dispatch table; a call
            # through one of its entries may run any of them.
            members = [self._function(e.value) if type(e) is cst.DictElement else None for e in node.elements]
            return _functions(members) if all(m is not None for m in members) else None
        if kind is cst.IfExp:
            # `fn = compiled_step if compiled_step is not None else train_step`: a call through
            # `fn` runs one of them; the branches that name a project function are bound.
            members = [self._function(branch) or self._method_reference(branch) for branch in (node.body, node.orelse)]
            if any(m is not None and m[0] == "method" for m in members):
                # `forward = self.model.forward if dpo else self.model.forward_old`
                return ("callables", tuple(m for m in members if m is not None))
            return _functions([m for m in members if m is not None]) if any(members) else None
        if kind is cst.BinaryOperation:
            known = self._known(node) if concrete else None
            return known or self._joined_term((node.left, node.right))
        if kind is cst.BooleanOperation and type(node.operator) is cst.Or:
            # `sampler or UniformSampler(d)`: may be an instance of that class (for calls, not values).
            right = self.term_of(node.right)
            return right if right is not None and right[0] == "instance" else None
        return self._known(node) if concrete else None

    def _function(self, node: cst.BaseExpression) -> tuple | None:
        """A function named without being called (`callback=log_step`, `fn = helper`): a reference
        a later call through a parameter or a name runs."""
        found = self._heat.function_reference(node)
        return ("function", *found) if found is not None else None

    def _method_reference(self, node: cst.BaseExpression) -> tuple | None:
        """`self.model.forward_old` named without being called: the method of that name of what
        the receiver holds, which the project pass looks up once the receiver's class is known
        (an attribute that names no method of it is nothing)."""
        if type(node) is not cst.Attribute or node.attr.value in _COMMON_METHODS:
            return None
        owner = self.term_of(node.value, concrete=False)
        if owner is None or owner[0] not in _RECEIVER_TERMS:
            return None
        return ("method", owner, node.attr.value)

    def _term_of_call(self, call: cst.Call, concrete: bool = True) -> tuple | None:
        func_name = dotted_name(call.func)
        first = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
        if (self._heat.qualified_call(call) == "functools.partial") and first is not None:
            # `partial(log_step, writer)`: runs `log_step`, its first parameters already given.
            inner = self.term_of(first)
            if inner is not None and inner[0] == "function":
                given = sum(1 for arg in call.args[1:] if arg.keyword is None and not arg.star)
                return ("function", inner[1], inner[2] + given)
            return None
        if func_name == "next" and first is not None:
            inner = self.term_of(first)
            return _bounded(("element", inner)) if inner is not None else None
        if func_name == "iter" and first is not None:
            return self.term_of(first)
        wrapped = self._wrapped_module(call, first)
        if wrapped is not None:
            return wrapped
        known = self._known(call) if concrete else None
        if known is not None:
            return known
        class_key = self._heat.class_key(call)
        if class_key is not None:
            return ("instance", class_key)
        callee = self._heat.callee_key(call)
        tensor = self._tensor(call) if concrete else None
        if callee is None and type(call.func) is cst.Name:
            called = self._called_through_a_name(call)
            if called is not None:
                return _bounded(("or", called, tensor)) if tensor is not None else called
        if callee is None or (type(call.func) is cst.Name and call.func.value in _BUILTINS):
            return self._follows_its_tensors(call, tensor)
        if unrooted(callee).split(".", 1)[0] in _LIBRARIES:
            # `F.nll_loss(...)` is no project function: what the walk knows of it says more.
            return self._follows_its_tensors(call, tensor)
        # What the project's function returns; else the tensor the walk knows (`loss.detach()`).
        result = self._result_term(call, callee)
        return _bounded(("or", result, tensor)) if tensor is not None else result

    def _called_through_a_name(self, call: cst.Call) -> tuple | None:
        """`loss, out = forward()` where `forward` is a parameter (or a closure's name) that every
        caller hands a project function: what that function returns for this call, evaluated by
        the project pass (`_Project.called_result`). A name holding anything else is unknown."""
        held = self._symbolic(call.func)
        if held is None or held[0] not in ("param", "function", "functions"):
            return None
        if any(arg.star for arg in call.args):
            return ("called", held, ())
        return _bounded(("called", held, self._argument_terms(call))) or ("called", held, ())

    def _argument_terms(self, call: cst.Call) -> tuple:
        """Each argument's slot (position or keyword) and term, where it has one."""
        return tuple(
            (arg.keyword.value if arg.keyword is not None else index, term)
            for index, arg in enumerate(call.args)
            if (term := self.term_of(arg.value)) is not None
        )

    def _result_term(self, call: cst.Call, callee: str) -> tuple:
        """`("result", callee)`; with the call's tensor-like arguments when it passes any, so that
        a function whose returns follow its parameters is answered for this call
        (`_Project.result_with`)."""
        if any(arg.star for arg in call.args):
            return ("result", callee)
        args = self._argument_terms(call)
        if not any(term[0] in _TENSOR_TERMS for _, term in args):
            return ("result", callee)
        func = attribute_of_getattr(call.func) or call.func
        through_instance = type(func) is cst.Attribute and not _names_a_class(func.value)
        return _bounded(("result", callee, args, through_instance)) or ("result", callee)

    def _follows_its_tensors(self, call: cst.Call, tensor: tuple | None) -> tuple | None:
        """`torch.cat((a, b))`, `x.clamp(min=0)`, `torch.argmax(iou, dim=-1)`: math whose result is
        where its tensors are, which the project pass may know when the walk does not (a
        parameter every caller passes in host memory); what the walk knows comes first."""
        if tensor in (DEVICE_TENSOR, HOST_TENSOR):
            return tensor
        func = call.func
        qualified = self._heat.qualified_call(call) or ""
        if qualified.startswith("torch.") and not qualified.startswith(_NOT_MATH):
            operands = [arg.value for arg in call.args if not arg.star]
        elif type(func) is cst.Attribute and not qualified and func.attr.value in _PLACE_KEEPING_METHODS:
            operands = [func.value, *(arg.value for arg in call.args if not arg.star)]
        else:
            return tensor
        joined = self._joined_term(operands)
        if joined is None:
            return tensor
        return _bounded(("or", joined, tensor)) if tensor is not None else joined

    def _joined_term(self, operands) -> tuple | None:
        """Math on `operands`: on the accelerator if one of them is, in host memory if all the
        tensors among them are (evaluated by the project pass); unknown if one is unknown."""
        parts: list[tuple] = []
        operands = [part for operand in operands for part in listed_values(operand)]
        for operand in operands:
            if _is_a_setting(operand):
                continue
            term = self.term_of(operand)
            if term == NUMBER:
                continue
            if term is None or term[0] not in _TENSOR_TERMS:
                return None
            for part in term[1:] if term[0] == "joined" else (term,):
                if part not in parts:
                    parts.append(part)
        return _bounded(("joined", *parts)) if parts else None

    def _wrapped_module(self, call: cst.Call, first: cst.BaseExpression | None) -> tuple | None:
        """`Net().cuda()`, `model.to(device)`, `torch.compile(model)`, `DDP(model, ...)`: the same
        module, moved or wrapped; calling the result runs the instance's `forward`."""
        to_device = False
        if type(call.func) is cst.Attribute and call.func.attr.value in _MODULE_MOVES:
            to_device = device_move(call, self._imports, self._facts) is not None
            if to_device and self._is_host_batch(call.func.value):
                return DEVICE_TENSOR  # a loader's batch copied onto the accelerator: no module
            inner = self.term_of(call.func.value)
        elif first is not None and (self._heat.qualified_call(call) or "").rsplit(".", 1)[-1] in _MODULE_WRAPPERS:
            inner = self.term_of(first)
        else:
            return None
        if inner is not None and inner[0] == "or":
            inner = inner[1]  # the project's instance, not the walk's guess that it is a tensor
        if inner is not None and inner[0] in ("result", "item"):
            # `model = build_model(cfg); model = model.to(device)`, or `model, opt = get_model(...)`
            # then `DataParallel(model)`: the factory's instance, once the project pass knows what
            # it returns; a batch or a tensor moved onto the accelerator (`x.cuda(non_blocking=True)`
            # of a loader's batch) is a tensor there.
            return _bounded(("module", inner, to_device))
        return inner if inner is not None and inner[0] in ("instance", "self", "module") else None

    def _element_of(self, iterable: cst.BaseExpression) -> tuple | None:
        """What one iteration over `iterable` binds (`enumerate` pairs a number with it)."""
        if type(iterable) is cst.Call and dotted_name(iterable.func) == "enumerate" and iterable.args:
            inner = self.term_of(iterable.args[0].value)
            return _bounded(("tuple", NUMBER, ("element", inner))) if inner is not None else None
        inner = self.term_of(iterable)
        return _bounded(("element", inner)) if inner is not None else None

    def _known(self, node: cst.BaseExpression) -> tuple | None:
        """Facts the walk already holds: a number, a DataLoader, a host batch, a run-long list."""
        if type(node) is cst.Name and node.value in self._run_lists and self._global(node.value):
            return RUN_LIST
        kind = self._facts.kind_of(node)
        if kind is Kind.NUMBER:
            return NUMBER
        if kind is Kind.DATALOADER:
            return SOURCE
        if self._is_host_batch(node):
            # A batch of a loader `accelerator.prepare` (or a Fabric) placed arrives on the device.
            return DEVICE_TENSOR if self._place_of(node) is Place.DEVICE else BATCH
        return HOST_TENSOR if self._host_tensor(node, kind) else None

    def _host_tensor(self, node: cst.BaseExpression, kind: Kind | None) -> bool:
        """A tensor in host memory: shown there by the place model, and a tensor by the facts (a
        name, an attribute), by a torch call, or by a tensor method (`t.cpu()`); `iter(loader)`
        and `t.cpu().numpy()` are in host memory too, but no tensor."""
        if self._place_of(node) is not Place.HOST:
            return False
        if kind is Kind.TENSOR:
            return True
        if type(node) is not cst.Call:
            return False
        method = method_name(node)
        if method in _LEAVES_TENSORS:
            return False
        return (self._heat.qualified_call(node) or "").startswith("torch.") or method in _HOST_TENSOR_METHODS

    def _global(self, name: str) -> bool:
        """`name` here is the module's own (no parameter or local binding of it in the functions walked)."""
        return all(name not in env for env in self._envs[1:]) and all(
            function is None or name not in function.params for function in self._functions
        )

    def _tensor(self, node: cst.BaseExpression) -> tuple | None:
        """A tensor the walk knows (on the accelerator when that is shown): the last resort for a
        name, after what it is bound to in the project (a host batch says more)."""
        if type(node) is cst.Attribute:
            # `self.data` is a tensor by its name only: no fact; `self.loss` after
            # `self.loss.backward()` is one the walk learned.
            if self._facts.lookup(dotted_name(node) or "") is not Kind.TENSOR:
                return None
        elif type(node) is cst.Call:
            # `loss.detach()`, `torch.stack(parts)`; not a tensor by its callee's name alone.
            if self._facts.kind_of(node) is not Kind.TENSOR or self._facts.tensor_by_name_only(node):
                return None
        elif self._facts.kind_of(node) is not Kind.TENSOR:
            return None
        place = self._place_of(node)
        if place is not None:
            return DEVICE_TENSOR if place is Place.DEVICE else HOST_TENSOR
        # In a module that never names a device, a tensor of unknown place is a host tensor as
        # likely as not: it lends its callee nothing.
        return TENSOR if self._heat.accelerated else None

    def _symbolic(self, node: cst.BaseExpression) -> tuple | None:
        """A name's term in this function, a parameter of it, or an attribute `__init__` stored."""
        function = self._functions[-1]
        if type(node) is cst.Name:
            name = node.value
            found = self._envs[-1].get(name)
            if found is not None or name in self._envs[-1]:
                return found
            if function is not None and function.method and name == "self" and tuple(function.order[:1]) == ("self",):
                return ("self", _class_of(function))  # this class's instance, or a subclass's
            if function is not None and name in function.params:
                return ("param", function.key, name)
            # A closure reads its enclosing functions' names (`backward = a if amp else b` in
            # `run`, called in the `training_step` defined there), innermost first.
            for env, outer in zip(reversed(self._envs[1:-1]), reversed(self._functions[1:-1])):
                if name in env:
                    return env[name]
                if outer is not None and name in outer.params:
                    return ("param", outer.key, name)
            return self._envs[0].get(name) if function is not None else None
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
            found = self._envs[-1].get(f"self.{node.attr.value}")
            if found is not None:
                return found
            if function is not None and function.method:
                return ("attr", _class_of(function), node.attr.value)
        return None

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, term: tuple | None) -> None:
        kind = type(target)
        if kind in (cst.Tuple, cst.List):
            values = value.elements if type(value) in (cst.Tuple, cst.List) else None
            if values is not None and len(values) == len(target.elements):
                for element, item in zip(target.elements, values):
                    self._bind(element.value, item.value, self.term_of(item.value))
                return
            # The unpack's width travels with each part: only returns of that width can fill it.
            width = len(target.elements) if all(type(e) is cst.Element for e in target.elements) else -1
            for index, element in enumerate(target.elements):
                part = _bounded(("item", term, index, width)) if term is not None and type(element) is cst.Element else None
                self._bind(element.value, None, part)
            return
        name = dotted_name(target)
        if name is None:
            return
        env = self._envs[-1]
        if term is None:
            env.pop(name, None)
            if "." not in name:
                env[name] = None  # a local rebinding hides the parameter of that name
        else:
            env[name] = term
        function = self._functions[-1]
        if name.startswith("self.") and name.count(".") == 1 and function is not None and function.method:
            summary = self._heat.classes.get(_class_of(function))
            if summary is not None:
                attribute = name[5:]
                if function.key.endswith(".__init__"):
                    known = summary.attrs.get(attribute, term)
                    summary.attrs[attribute] = term if known == term else _either(known, term)
                else:
                    summary.reassigned.add(attribute)


# How deeply terms may nest. Statements can nest them without end (`x1 = next(x0)`, `x2 =
# next(x1)`, ...); a deeper term reads as unknown, so no later step (evaluation, comparison,
# the results cache) walks thousands of levels. Real code nests a handful.
_MAX_TERM_DEPTH = 32


def _bounded(term: tuple) -> tuple | None:
    """`term`, or None (unknown) when it nests more than `_MAX_TERM_DEPTH` levels."""
    level = [term]
    for _ in range(_MAX_TERM_DEPTH):
        level = [part for outer in level for part in outer[1:] if type(part) is tuple]
        if not level:
            return term
    return None


def _class_of(function: FunctionInfo) -> str:
    return function.key.rsplit(".", 1)[0]


def _names_a_class(node: cst.BaseExpression) -> bool:
    """`Trainer.step(obj)`: a call through the class passes `self` explicitly."""
    name = dotted_name(node)
    return bool(name) and name.rsplit(".", 1)[-1][:1].isupper()


# ----- the project pass -----

# Terms `value` follows on the stack at once (each costs about five frames): a longer chain is
# evaluated in pieces, far end first, instead of overflowing Python's stack.
_MAX_DEPTH = 50


class _TooDeep(Exception):
    """A term `_MAX_DEPTH` terms deep, to be evaluated before the ones that lead to it."""

    def __init__(self, term: tuple) -> None:
        super().__init__()
        self.term = term



class _Project:
    """Evaluates terms over every module's summaries (memoised; a cycle reads as unknown)."""

    def __init__(self, models: list[HeatModel]) -> None:
        self.functions: dict[str, list[FunctionInfo]] = {}
        for model in models:
            for fn in model.functions:
                self.functions.setdefault(fn.key, []).append(fn)
        self.classes: dict[str, ClassSummary] = {}
        for model in models:
            self.classes.update(model.classes)
        self.sites = [site for model in models for site in model.call_sites]
        self._unique_functions = defined_once(fn.key for fns in self.functions.values() for fn in fns)
        self._unique_classes = defined_once(self.classes)
        self._reexports = project_reexports(models)
        self.calls: dict[str, list[tuple[CallSite, int]]] = {}
        self._memo: dict[tuple, tuple | None] = {}
        # Functions whose returns are being answered for one call (`_substituted_result`).
        self._substituting: set[str] = set()
        # Terms being evaluated (`value`'s recursion depth), and the chain of terms deferred until
        # a deeper one is known.
        self._depth = 0
        self._deferred: list[tuple] = []
        self._function_keys: dict[str, str | None] = {}
        self._class_keys: dict[str, str | None] = {}
        # Sites whose target does not depend on any value (no receiver to read), found once.
        self._fixed: list[tuple[CallSite, tuple[str, int]]] | None = None
        self._fixed_calls: dict[str, list[tuple[CallSite, int]]] = {}
        self._received: list[CallSite] = []
        self.targets: list[tuple[CallSite, tuple[str, int]]] = []
        self._derived: dict[str, list[str]] | None = None

    # --- keys ---

    def function_key(self, key: str) -> str | None:
        return _known_key(key, self.functions, self._function_keys, self._unique_functions, self._reexports)

    def class_key(self, key: str) -> str | None:
        return _known_key(key, self.classes, self._class_keys, self._unique_classes, self._reexports)

    def method_of(self, class_key: str, method: str) -> str | None:
        """`Cls.method`, looked up through the bases (breadth first, within the project)."""
        return next((f"{key}.{method}" for key in self._lineage(class_key) if f"{key}.{method}" in self.functions), None)

    def _lineage(self, class_key: str) -> Iterator[str]:
        """The class and its bases defined in the project, breadth first, each once."""
        queue, seen = collections.deque([class_key]), set()
        while queue:
            key = self.class_key(queue.popleft())
            if key is None or key in seen:
                continue
            seen.add(key)
            yield key
            queue.extend(self.classes[key].bases)

    def target_of(self, site: CallSite) -> tuple[str, int] | None:
        """The project function a call site runs and how many leading parameters it fills itself."""
        if site.via is not None and self.function_key(site.callee) is None:
            receiver = self.value(site.via[0])
            if receiver is not None and receiver[0] in ("functions", "instances"):
                return None  # several functions: `targets_of` names them all
            if receiver is not None and receiver[0] == "function" and site.via[1] == "__call__":
                return receiver[1], receiver[2]  # a callback, an alias or a partial of a function
            if receiver is None or receiver[0] not in ("instance", "self"):
                return None
            return self._method_called(receiver[1], site.via[1])
        key = self.function_key(site.callee)
        if key is not None:
            return key, self._skipped(key, site.through_instance)
        class_key = self.class_key(site.callee)
        if class_key is not None:
            init = self.method_of(class_key, "__init__")
            return (init, -1) if init is not None else None  # -1: a construction, not a call to run
        owner, _, method = site.callee.rpartition(".")
        inherited = self.method_of(owner, method) if owner and self.class_key(owner) is not None else None
        return (inherited, self._skipped(inherited, site.through_instance)) if inherited is not None else None

    def targets_of(self, site: CallSite) -> list[tuple[str, int]]:
        """Every function a call site runs: one, or each of the callbacks a parameter or a list
        of them may hold (`for hook in hooks: hook(loss)`, `dispatch(cb, loss)` called with many)."""
        if site.via is not None and self.function_key(site.callee) is None:
            receiver = self.value(site.via[0])
            kind, method = receiver[0] if receiver is not None else None, site.via[1]
            if kind == "functions" and method == "__call__":
                return list(receiver[1])
            if kind in ("instances", "self"):
                # A submodule built by configuration, or `model = self.train(); model(x)` in a
                # base class: each class it may be runs its own method (a subclass's `forward`).
                keys = receiver[1] if kind == "instances" else (receiver[1], *self._subclasses(receiver[1]))
                return list(dict.fromkeys(f for key in keys if (f := self._method_called(key, method)) is not None))
        found = self.target_of(site)
        return [found] if found is not None else []

    def _subclasses(self, class_key: str) -> tuple[str, ...]:
        """The project's classes that derive from `class_key` (directly or not), found once."""
        if self._derived is None:
            self._derived = {}
            for key in self.classes:
                for ancestor in itertools.islice(self._lineage(key), 1, None):
                    self._derived.setdefault(ancestor, []).append(key)
        return tuple(self._derived.get(self.class_key(class_key) or class_key, ()))

    def _method_called(self, class_key: str, method: str) -> tuple[str, int] | None:
        """The method an instance call runs (its class's or a base's), with `self` filled."""
        found = self.method_of(class_key, method)
        if found is None and method == "__call__":
            found = self.method_of(class_key, "forward")  # an nn.Module's call runs forward
        return (found, self._skipped(found, True)) if found is not None else None

    def _skipped(self, key: str, through_instance: bool) -> int:
        """A method called through an instance gets `self` from it; a static method does not."""
        return 1 if through_instance and all(f.method for f in self.functions[key]) else 0

    def index_calls(self) -> bool:
        """Index the call sites by the function they run, reading receivers with the previous
        index (memo cleared); True when the sites bound through receivers changed."""
        if self._fixed is None:
            # Without a receiver to read, a target depends only on the callee's name: found once.
            by_name: dict[tuple[str, bool], tuple[str, int] | None] = {}
            self._fixed = []
            for site in self.sites:
                if site.via is None:
                    name = (site.callee, site.through_instance)
                    if name not in by_name:
                        by_name[name] = self.target_of(site)
                    if by_name[name] is not None:
                        self._fixed.append((site, by_name[name]))
            self._received = [site for site in self.sites if site.via is not None]
            self._fixed_calls = self.calls = _by_target(self._fixed)
            self.targets, self._memo = self._fixed, {}
        bound = [(site, target) for site in self._received for target in self.targets_of(site)]
        changed = [t for _, t in bound] != [t for _, t in self.targets[len(self._fixed):]]
        self.targets = self._fixed + bound
        calls = _by_target(bound, {key: list(sites) for key, sites in self._fixed_calls.items()} if bound else self._fixed_calls)
        self.calls, self._memo = calls, {}
        return changed

    # --- values ---

    def value(self, term: tuple | None) -> tuple | None:
        if term is None:
            return None
        tag = term[0]
        if tag in _FACTS:
            return term
        if tag in ("instance", "self"):
            return (tag, self.class_key(term[1]) or term[1])
        if tag == "function":
            key = self.function_key(term[1])
            return ("function", key, term[2]) if key is not None else None
        if tag == "functions":
            return _functions(self.value(("function", *member)) for member in term[1])
        if term in self._memo:
            return self._memo[term]
        if term in self._deferred:
            return None  # being evaluated further out: a cycle, which reads as unknown
        if self._depth:
            if self._depth >= _MAX_DEPTH:
                raise _TooDeep(term)
            return self._evaluate_once(term)
        # Outermost: a chain deeper than the bound (400 helpers each forwarding an argument, a
        # 500-level `x[0][0]...`) is evaluated from its far end first, so the stack stays short.
        self._deferred.append(term)
        try:
            while self._deferred:
                deepest = self._deferred[-1]
                try:
                    if deepest not in self._memo:
                        self._evaluate_once(deepest)
                    self._deferred.pop()
                except _TooDeep as deeper:
                    self._deferred.append(deeper.term)
        finally:
            self._deferred.clear()
        return self._memo[term]

    def _evaluate_once(self, term: tuple) -> tuple | None:
        self._memo[term] = None  # a cycle reads as unknown
        self._depth += 1
        try:
            found = self._evaluate(term)
        except _TooDeep:
            del self._memo[term]  # not evaluated: it is, again, once the deeper term is known
            raise
        finally:
            self._depth -= 1
        self._memo[term] = found
        return found

    def _evaluate(self, term: tuple) -> tuple | None:
        tag = term[0]
        if tag == "param":
            return self.parameter(term[1], term[2])
        if tag == "result":
            found = self.result(term[1])
            if found in (None, TENSOR) and len(term) == 4:
                return self.result_with(term[1], term[2], term[3]) or found
            return found
        if tag == "attr":
            return self.attribute(term[1], term[2])
        if tag == "called":
            return self.called_result(self.value(term[1]), term[2])
        if tag == "tuple":
            return ("tuple", *(self.value(t) for t in term[1:]))
        if tag == "or":
            return self.value(term[1]) or term[2]
        if tag == "joined":
            return _joined_fact(self.value(part) for part in term[1:])
        if tag == "either":
            return self._alternatives(term[1:])
        if tag == "method":
            return self._method_value(term[1], term[2])
        if tag == "callables":
            found = [value for member in term[1] if (value := self.value(member)) is not None]
            return _functions(found) if found else None
        if tag == "module":
            moved = self.value(term[1])
            if moved is not None and moved[0] in ("instance", "instances"):
                return moved
            return DEVICE_TENSOR if term[2] and moved in (BATCH, TENSOR, DEVICE_TENSOR) else None
        inner = self.value(term[1])
        if tag == "element":
            if inner is not None and inner[0] in ("function", "functions"):
                return inner  # a loop over a list of callbacks: each one in turn
            return BATCH if inner == SOURCE else HOST_TENSOR if inner == HOST_TENSOR else None
        if tag == "part":
            # A part of a batch is host data; of a tensor, a tensor where it is (`out[:, :4]`).
            return inner if inner in (BATCH, HOST_TENSOR, DEVICE_TENSOR) else None
        if tag == "item":
            if inner is not None and inner[0] == "tuple":
                return inner[1 + term[2]] if term[2] + 1 < len(inner) else None
            if inner is None and term[1] is not None and term[1][0] == "result" and term[3] > 0:
                return self._unpacked(term[1][1], term[2], term[3])
            return inner if inner in (BATCH, HOST_TENSOR) else None
        return None

    def _method_value(self, owner: tuple, method: str) -> tuple | None:
        """What `owner.method` named without a call is: the method each class the receiver may
        hold defines (or inherits), as functions a call through the name runs."""
        receiver = self.value(owner)
        if receiver is None or receiver[0] not in ("instance", "self", "instances"):
            return None
        keys = receiver[1] if receiver[0] == "instances" else (receiver[1],)
        found = [("function", *f) for key in keys if (f := self._method_called(key, method)) is not None]
        return _functions(found) if found else None

    def _alternatives(self, terms: tuple) -> tuple | None:
        """`self.head = nn.Linear(...)` in one branch of `__init__`, `Attention(...)` in another:
        the same value when all agree, else the project classes it may hold ("instances"), whose
        methods a call through it may run."""
        values = [self.value(t) for t in terms]
        if values[0] is not None and all(v == values[0] for v in values):
            return values[0]
        classes = tuple(dict.fromkeys(v[1] for v in values if v is not None and v[0] == "instance" and self.class_key(v[1])))
        return ("instances", classes) if classes else None

    def parameter(self, function_key: str, name: str) -> tuple | None:
        """The fact every call site passes to `name`; unknown unless all agree."""
        functions = self.functions.get(function_key, ())
        if len(functions) != 1:
            return None
        function = functions[0]
        order = function.order
        sites = self.calls.get(function_key, ())
        if not sites or name not in function.params:
            return None
        passed: list[tuple] = []
        default = dict(function.literal_defaults).get(name)
        for site, skipped in sites:
            # Behind `*args` or `**kwargs` a position may be anything, but a keyword passed by
            # name is that value (Python refuses the call if the rest passed it again).
            position = None if site.starred or name not in order else order.index(name) - skipped
            term = next((t for slot, t in site.args if slot == name or slot == position), None)
            if term is None and default is not None and not site.starred and not any(
                slot == name or slot == position for slot in site.passed
            ):
                term = (LITERAL, default)  # not passed: the parameter keeps its default
            fact = self.value(term)
            if fact is None:
                return None
            passed.append(fact)
        if all(fact == passed[0] for fact in passed):
            return passed[0]
        # Different functions handed in (a dispatcher of callbacks): it may call any of them.
        return _functions(passed) if all(f[0] in ("function", "functions") for f in passed) else None

    def read_by_every_caller(self, function_key: str, name: str) -> bool:
        """Does every call site pass `name` a value it read into Python just before the call?"""
        functions = self.functions.get(function_key, ())
        sites = self.calls.get(function_key, ())
        if len(functions) != 1 or not sites or name not in functions[0].params:
            return False
        order = functions[0].order
        for site, skipped in sites:
            if site.starred:
                return False
            position = order.index(name) - skipped if name in order else None
            if not any(slot == name or slot == position for slot in site.read_args):
                return False
        return True

    def global_value(self, terms: list) -> tuple | None:
        """The fact a function reading a global finds, whichever module-level binding ran last:
        the one every binding agrees on (a tensor either way, if some show it on the accelerator
        and others do not); unknown if any binding is not a fact."""
        facts = {self.value(term) for term in terms}
        if not facts or None in facts:
            return None
        fact = facts.pop() if len(facts) == 1 else _agreed(facts)
        return fact if fact in _GLOBAL_FACTS else None

    def result(self, callee: str) -> tuple | None:
        key = self.function_key(callee)
        if key is None:
            class_key = self.class_key(callee)
            return ("instance", class_key) if class_key is not None else None
        functions = self.functions[key]
        if len(functions) != 1:
            return None
        function = functions[0]
        if function.yields:
            produced = {self.value(t) for t in function.yields}
            return SOURCE if produced and all(_holds_a_batch(v) for v in produced) else None
        found = {self.value(t) for t in function.results}
        return found.pop() if len(found) == 1 else None

    def _unpacked(self, callee: str, index: int, width: int) -> tuple | None:
        """`model, optimizer = get_model(...)` where `get_model` returns `model, optimizer` on one
        path and `model` alone on another: the unpack succeeds only where a `width`-tuple came
        back, so position `index` is what every such return holds there. A return that could be
        unpacked too (unknown, a tensor, a batch) leaves it unknown; an instance or a number cannot."""
        key = self.function_key(callee)
        functions = self.functions.get(key, ()) if key is not None else ()
        if len(functions) != 1 or functions[0].yields:
            return None
        found = set()
        for fact in (self.value(t) for t in functions[0].results):
            if fact is not None and fact[0] == "tuple" and len(fact) == width + 1:
                found.add(fact[1 + index])
            elif fact is None or fact[0] not in ("instance", "number"):
                return None
        return found.pop() if len(found) == 1 else None

    def returned(self, key: str) -> tuple | None:
        """What a function gives its callers when every `return` agrees: a number, or a tensor
        (on the accelerator when every one is shown there). A generator returns none of these."""
        functions = self.functions.get(key, ())
        if len(functions) != 1 or functions[0].yields:
            return None
        found = {self.value(t) for t in functions[0].results}
        tuples = {len(fact) for fact in found if fact is not None and fact[0] == "tuple"}
        if len(tuples) == 1 and all(fact is not None and fact[0] == "tuple" for fact in found):
            # `return loss, logits` on every path: what each position gives, element by element.
            width = tuples.pop()
            elements = tuple(_agreed({fact[i] for fact in found}) for i in range(1, width))
            return ("tuple", *elements) if any(e is not None for e in elements) else None
        return _agreed(found)

    def called_result(self, held: tuple | None, args: tuple) -> tuple | None:
        """What calling a held function (`("function", key, skipped)`, or several) returns with
        these argument terms: what every one of them agrees on."""
        if held is None or held[0] not in ("function", "functions"):
            return None
        found = []
        for key, skipped in [held[1:]] if held[0] == "function" else held[1]:
            result = self.result(key)
            if result in (None, TENSOR) and args and key in self.functions and len(self.functions[key]) == 1:
                result = self._substituted_result(key, args, skipped) or result
            found.append(result)
        # One answer (a tuple of `return loss, out` included) when all agree; else the kind they share.
        return found[0] if all(result == found[0] for result in found) else _agreed(set(found))

    def result_at(self, key: str, site: CallSite, skipped: int) -> tuple | None:
        """What the function `key` returns at this call site."""
        return None if site.starred else self._substituted_result(key, site.args, skipped)

    def result_with(self, callee: str, args: tuple, through_instance: bool) -> tuple | None:
        """What `callee` returns when called with these argument terms."""
        key = self.function_key(callee)
        if key is None or len(self.functions[key]) != 1:
            return None
        return self._substituted_result(key, args, self._skipped(key, through_instance))

    def _substituted_result(self, key: str, args: tuple, skipped: int) -> tuple | None:
        """The function's return terms with its parameters replaced by what a call passes (one
        not passed is unknown: its default is not read). A function already being answered
        this way (recursion) is unknown."""
        function = self.functions[key][0]
        if function.yields or not function.results or key in self._substituting:
            return None
        order = function.order
        passed: dict[str, tuple] = {}
        for slot, term in args:
            name = slot if type(slot) is str else order[slot + skipped] if 0 <= slot + skipped < len(order) else None
            if name is not None:
                passed[name] = term
        if any(_term_size(result) > _MOST_SUBSTITUTED for result in function.results):
            return None
        self._substituting.add(key)
        try:
            found = set()
            for result in function.results:
                term = _substituted(result, key, passed)
                found.add(self.value(_bounded(term)) if term is not None else None)
        finally:
            self._substituting.discard(key)
        return _agreed(found)

    def attribute(self, class_key: str, name: str) -> tuple | None:
        """What `self.name` holds, from the nearest class that assigns it (unknown if reassigned)."""
        for key in self._lineage(class_key):
            summary = self.classes[key]
            if name in summary.reassigned:
                return None
            if name in summary.attrs:
                return self.value(summary.attrs[name])
        # `step_fn=self.train_step`: a bound method, or a subclass's override of it.
        method = self.method_of(class_key, name)
        if method is None:
            return None
        overrides = (f"{sub}.{name}" for sub in self._subclasses(class_key))
        keys = dict.fromkeys([method, *(key for key in overrides if key in self.functions)])
        return _functions(("function", key, self._skipped(key, True)) for key in keys)


def _either(known: tuple | None, term: tuple | None) -> tuple | None:
    """The alternatives `__init__` may leave in an attribute (unknown if one of them is)."""
    if known is None or term is None:
        return None
    members = (*(known[1:] if known[0] == "either" else (known,)), term)
    return _bounded(("either", *dict.fromkeys(members)))


def _functions(facts) -> tuple | None:
    """One "function" fact, or "functions" naming each (key, parameters filled) once, in order."""
    members: list[tuple[str, int]] = []
    for fact in facts:
        if fact is None:
            return None
        for member in ([fact[1:]] if fact[0] == "function" else fact[1]):
            if tuple(member) not in members:
                members.append(tuple(member))
    if not members:
        return None
    return ("function", *members[0]) if len(members) == 1 else ("functions", tuple(members))


def _by_target(found, calls=None) -> dict[str, list[tuple[CallSite, int]]]:
    calls = {} if calls is None else calls
    for site, target in found:
        calls.setdefault(target[0], []).append((site, target[1] if target[1] >= 0 else 1))
    return calls


def _holds_a_batch(fact: tuple | None) -> bool:
    """A generator yields host batches: a batch, or a tuple of parts of one (`images, labels`)."""
    if fact == BATCH:
        return True
    return fact is not None and fact[0] == "tuple" and BATCH in fact[1:]


def _known_key(
    key: str, defined: dict, cache: dict[str, str | None], unique: dict[str, str], reexports: dict[str, str],
) -> str | None:
    """`key` itself when defined, else what a package re-exports under it, else the one definition
    elsewhere that a spelling of it names."""
    if key in defined:
        return key
    found = cache.get(key, "")
    if found == "":
        named = through_reexports(key, reexports)
        found = cache[key] = named if named in defined else defined_under(named, unique)
    return found


def bind_project(models: list[HeatModel]) -> None:
    """Bind call sites to the project's functions and parameters to what every call site passes.

    Updates the summaries in place: a call site known only through its receiver, or calling an
    inherited method, gets its callee (so heat follows it), and each function its `bound` facts.
    """
    project = _Project(models)
    # Receivers' classes depend on parameters, which depend on the calls found: a few rounds.
    for _ in range(4):
        if not project.index_calls():
            break
    bound_sites: set[int] = set()
    routes: dict[int, tuple[FunctionInfo, list]] = {}
    for site, target in project.targets:
        if target[1] < 0 or site.callee == target[0] or project.function_key(site.callee) == target[0]:
            continue
        via = site.via
        if id(site) in bound_sites:
            # One more function the call may run (a callback among several): a site of its own.
            site = another_target(site)
        bound_sites.add(id(site))
        site.callee = target[0]
        caller = site.where.function
        site.foreign = caller is None or project.functions[target[0]][0].path != caller.path
        if via is not None and caller is not None:
            routes.setdefault(id(caller), (caller, []))[1].append((via, target[0]))
    for caller, found in routes.values():
        caller.routes = tuple(dict.fromkeys(found))
    for key, functions in project.functions.items():
        if key not in project.calls:
            continue
        for function in functions:
            bound = tuple(
                (name, fact) for name in sorted(function.params)
                if (fact := project.parameter(key, name)) in SEEDED or (fact is not None and fact[0] == LITERAL)
            )
            read = tuple((name, READ) for name in sorted(function.params) if project.read_by_every_caller(key, name))
            function.bound = tuple(sorted((*bound, *read)))
    module_globals = {model.path: model.module_globals for model in models}
    for functions in project.functions.values():
        for function in functions:
            if function.free:
                found = module_globals.get(function.path, {})
                read = tuple(
                    (name, fact) for name in sorted(function.free)
                    if (fact := project.global_value(found.get(name, ()))) is not None
                )
                if read:
                    function.bound = tuple(sorted((*function.bound, *read)))
    for key, functions in project.functions.items():
        returned = project.returned(key)
        for function in functions:
            function.returns = returned
            function.returned_at = ()
    _bind_results_at_callers(project)
    for model in models:
        model.reads_answered = tuple(sorted(
            callee for callee in model.asked_reads
            if (key := project.function_key(callee)) is not None
            and any(function.reads_params or function.returns_read for function in project.functions[key])
        ))
        model.answered = [
            (*asker, answer == DEVICE_TENSOR) for asker, callee, assumed in model.asked_results
            if (key := project.function_key(callee)) is not None
            and _changes_a_kind(answer := _answer_at(project, asker[0], key), assumed)
        ]


def _answer_at(project: _Project, caller_key: str | None, key: str) -> tuple | None:
    """What a call of `key` made in `caller_key` returns there: the caller's own answer
    (`returned_at`), else what the function returns wherever it is called."""
    callers = project.functions.get(caller_key, ()) if caller_key is not None else ()
    here = dict(callers[0].returned_at).get(key) if len(callers) == 1 else None
    return here or project.functions[key][0].returns


# What a call may be found to return where it is made (a tuple is left to `returns`).
_FACTS_AT_A_CALL = frozenset({NUMBER, DEVICE_TENSOR, HOST_TENSOR})
# Return terms larger than this are not substituted call by call.
_MOST_SUBSTITUTED = 4000


def _bind_results_at_callers(project: _Project) -> None:
    """`iou(gt, anchors)` of host boxes in one function, of device boxes in another: a function
    whose returns follow its parameters gives no one answer (`returns`), but each call of it
    does, its parameters replaced by what that call passes. A caller whose every call of the
    function agrees keeps the answer (`FunctionInfo.returned_at`)."""
    for key, sites in project.calls.items():
        functions = project.functions.get(key, ())
        if len(functions) != 1 or functions[0].returns not in (None, TENSOR) or not functions[0].results:
            continue
        at: dict[int, tuple[FunctionInfo, set]] = {}
        for site, skipped in sites:
            caller = site.where.function
            if caller is not None:
                at.setdefault(id(caller), (caller, set()))[1].add(project.result_at(key, site, skipped))
        for caller, found in at.values():
            fact = found.pop() if len(found) == 1 else None
            if fact in _FACTS_AT_A_CALL:
                caller.returned_at = tuple(sorted({*caller.returned_at, (key, fact)}))


def _joined_fact(values) -> tuple | None:
    """Math on these values: on the accelerator if one is, in host memory if every tensor is."""
    tensors = [value for value in values if value != NUMBER]
    if DEVICE_TENSOR in tensors:
        return DEVICE_TENSOR
    if tensors and all(value in (HOST_TENSOR, BATCH) for value in tensors):
        return HOST_TENSOR
    return None


def _substituted(term, key: str, passed: dict[str, tuple]):
    """`term` with the parameters of function `key` replaced by the terms in `passed` (None
    for one not there)."""
    if type(term) is not tuple:
        return term
    if len(term) == 3 and term[0] == "param" and term[1] == key:
        return passed.get(term[2])
    return tuple(_substituted(part, key, passed) for part in term)


def _term_size(term, limit: int = _MOST_SUBSTITUTED + 1) -> int:
    """How many tuples `term` holds, counted up to `limit`."""
    count, pending = 0, [term]
    while pending and count < limit:
        part = pending.pop()
        if type(part) is tuple:
            count += 1
            pending.extend(part)
    return count


def _is_a_setting(node: cst.BaseExpression) -> bool:
    """A literal, `True`/`None`, `-1`, or a dtype: an argument that is no tensor."""
    kind = type(node)
    if kind in (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        return True
    if kind is cst.Name and node.value in ("True", "False", "None"):
        return True
    if kind is cst.UnaryOperation:
        return _is_a_setting(node.expression)
    return kind is cst.Attribute and (dotted_name(node) or "").startswith("torch.")


def _agreed(found: set) -> tuple | None:
    """One fact for values that must all hold it: a number, or a tensor (on the accelerator, or
    in host memory, when every one is shown there); anything else, or a disagreement, is unknown."""
    if found and found <= {TENSOR, DEVICE_TENSOR, HOST_TENSOR}:
        # On the accelerator, or in host memory, only when every one is shown there.
        return found.pop() if len(found) == 1 else TENSOR
    return NUMBER if found == {NUMBER} else None


def literal_term(node: cst.BaseExpression) -> tuple | None:
    """`None`, `True`, `False` as an argument: ("literal", "None")."""
    if type(node) is cst.Name and node.value in LITERAL_NAMES:
        return (LITERAL, node.value)
    return None


def _changes_a_kind(returned: tuple | None, assumed: str | None) -> bool:
    """A number where a tensor was assumed, a tensor where nothing was, or a tensor shown on the
    accelerator where one was only assumed (a premise then proven): a finding may change."""
    if returned is None:
        return False
    if returned[0] == "tuple":
        return True  # element by element: more than the call's one kind could say
    if assumed == "tensor":
        return returned in (NUMBER, DEVICE_TENSOR, HOST_TENSOR)
    return True


def needs_reanalysis(model: HeatModel) -> bool:
    """Did the project pass bind a fact to a parameter whose unknown value the walk asked about
    (`HeatModel.asked`): a number where a rule asked for one, a batch or batch source where the
    host-data tracker did? Or learn what a function returns whose call's result the walk asked
    about, in code that runs more than once? Only then can the file's findings change."""
    if model.reads_answered or model.steps_answered:
        # A call there reads what the file may read again (`host_reads.py`), or steps an
        # optimizer where a rule asked whether it does.
        return True
    if model.answered:
        # Asked in code that runs more than once and may run on a device (its own or lent, or
        # the one the answer shows the value on).
        functions = {function.key: function for function in model.functions}
        for key, in_loop, on_device in model.answered:
            function = functions.get(key)
            accelerated = on_device or (function.accelerated if function is not None else model.accelerated)
            if accelerated and (in_loop or (function is not None and function.heat > Heat.ONCE)):
                return True
    if model.asked_branches:
        # A branch on parameters the walk asked about (`if x_mask is None:`) that what every
        # caller passes now decides otherwise than the walk read it (`caller_branches.py`).
        functions = {function.key: function for function in model.functions}
        for question in model.asked_branches:
            function = functions.get(question[0])
            if function is not None and function.bound and function.heat > Heat.ONCE and would_change(
                question, function.bound, function.params
            ):
                return True
    return any(
        (function.key, name, _asked_as(fact)) in model.asked
        # A tensor handed to code that runs once changes no finding: every tensor rule is
        # silent at once heat.
        and (fact not in (TENSOR, DEVICE_TENSOR, HOST_TENSOR, READ) or function.heat > Heat.ONCE)
        for function in model.functions for name, fact in function.bound
    )


def _asked_as(fact: tuple) -> str:
    return "branch" if fact[0] == LITERAL else _ASKED_AS.get(fact, "origin")


_ASKED_AS = {
    NUMBER: "number", TENSOR: "tensor", DEVICE_TENSOR: "tensor", HOST_TENSOR: "tensor", RUN_LIST: "list", READ: "read",
}
