"""Values already read into Python: what a call hands on read, and what it reads for its caller.

`lossf = loss.item()` and then `log_step(loss)`: the helper's own `loss.item()` waits for nothing
the first read did not wait for, a round trip for a value the caller already holds (VP202), not a
stall (VP201). The same holds the other way: after `log_step(loss)` read it, the caller's
`loss.item()` is the repeat, and so is `errG.item()` after `..., errG = train_step()` when
`train_step` read the `errG` it returns. Inline, VP202 sees both reads in one scope; across a call
these facts carry them:

- at each call, which plain names the code before it in the same block (or an enclosing one, up
  to its loop or function) read with `.item()`, `float()`, `.tolist()` and the like since they were
  last bound: the call binding records those arguments (`CallSite.read_args`) and the project pass
  tells a parameter that every caller passes read (`bindings.READ`);
- per function, the parameters it reads at the top of its body before anything can return
  (`FunctionInfo.reads_params`) and the parts of its result every `return` had read
  (`returns_read`): a re-analysis of the caller marks them read after the call.

Like VP202 it is conservative: a read in a branch counts only inside that branch, a read outside a
loop not inside it, and any binding of the name forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from verifier.static.local_names import names_bound_in, target_names
from verifier.static.names import dotted_name, method_name, receiver
from verifier.static.suites import SuiteVisits
from verifier.static.syncs import sync_of_call
from verifier.static.torch_api import mutates_its_receiver
from verifier.static.tracker import Tracker


@dataclass
class _FunctionReads:
    """What the walk learns of one function's reads while inside it."""

    node: cst.FunctionDef
    params: frozenset[str]
    body: int
    # Every name the function binds (`names_bound_in`), worked out when first needed.
    local_names: frozenset[str] | None = None
    rebound: set[str] = field(default_factory=set)
    # A `return`/`raise` seen: later reads may not happen on every call.
    exited: bool = False
    generator: bool = False
    param_reads: set[str] = field(default_factory=set)
    # Per `return`: its arity (0: one value) and the positions of the names it had read.
    returns: list[tuple[int, frozenset[int]]] = field(default_factory=list)


class HostReads(SuiteVisits, Tracker):
    def __init__(self, context) -> None:
        super().__init__(context)
        # One entry per open block: (the block's id, whether it is a loop's or a function's body, names read in it).
        self._blocks: list[tuple[int, bool, set[str]]] = [(0, True, set())]
        self._bodies_of_scopes: set[int] = set()
        self._functions: list[_FunctionReads] = []
        self._lambdas = 0
        # By call node: the names a call reads for its caller, with the callee as named there.
        self._read_by_call: dict[int, list[tuple[str, str, str]]] = {}

    def is_read(self, name: str) -> bool:
        """Was `name` read into Python earlier in this block, or an enclosing one of the same loop
        iteration and function, and not bound since?"""
        for _, starts_scope, names in reversed(self._blocks):
            if name in names:
                return True
            if starts_scope:
                return False
        return False

    def read_by_call(self, call: cst.Call) -> list[tuple[str, str, str]]:
        """What `call` reads into Python (its callee does, on every call): its arguments and its
        module's globals, as (name, callee, how)."""
        return self._read_by_call.get(id(call), [])

    def results_read(self, node: cst.Assign) -> list[tuple[str, str, str]]:
        """The targets of `x, y = f()` that `f` had read before returning them, as (name, callee, how)."""
        call = node.value
        if type(call) is not cst.Call or len(node.targets) != 1:
            return []
        found = self.context.heat.reads_of_call(call)
        facts = found[0] if found is not None else None
        if facts is None or not facts.returns_read:
            return []
        target = node.targets[0].target
        callee = f"`{self.context.code_for(call.func)}()`"
        if type(target) in (cst.Tuple, cst.List):
            elements = [element.value for element in target.elements]
            read = [elements[i] for i in facts.returns_read if 0 <= i < len(elements)]
        else:
            read = [target] if facts.returns_read == (-1,) else []
        return [(name, callee, "before it returned it") for node in read if (name := dotted_name(node)) is not None]

    # ----- blocks and scopes -----

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bodies_of_scopes.add(id(node.body))
        function = self.context.heat.where().function
        params = function.params if function is not None else frozenset()
        self._functions.append(_FunctionReads(node, params, id(node.body)))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        reads = self._functions.pop()
        function = self.context.heat.where().function
        if function is None or reads.generator:
            return  # calling a generator runs none of its body
        function.reads_params = tuple(sorted(reads.param_reads))
        arities = {arity for arity, _ in reads.returns}
        if len(arities) == 1:
            common = frozenset.intersection(*(positions for _, positions in reads.returns))
            function.returns_read = tuple(sorted(common))

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas += 1  # its body runs when it is called, not here

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas -= 1

    def visit_For(self, node: cst.For) -> None:
        self._bodies_of_scopes.add(id(node.body))
        self._forget(node.target)

    def visit_While(self, node: cst.While) -> None:
        self._bodies_of_scopes.add(id(node.body))

    def open_suite(self, body: cst.BaseSuite) -> None:
        starts_scope = id(body) in self._bodies_of_scopes
        self._bodies_of_scopes.discard(id(body))
        self._blocks.append((id(body), starts_scope, set()))

    def close_suite(self, body: cst.BaseSuite) -> None:
        self._blocks.pop()

    # ----- reads -----

    def visit_Call(self, node: cst.Call) -> None:
        if self._lambdas:
            return
        sync = sync_of_call(node, self.context.facts, self.context.imports)
        if sync is not None and sync.is_explicit_read:
            name = dotted_name(sync.subject)
            if name is not None:
                self._note_read(name)
                if type(sync.subject) is cst.Name:
                    # A parameter read here: every caller may have read it before the call.
                    self.context.heat.note_dependency(name, "read")
            return
        if mutates_its_receiver(method_name(node)) and receiver(node) is not None:
            self._forget(receiver(node))  # `t.add_(1)`: a later read is of a changed value
            return
        self._note_reads_of_call(node)

    def _note_reads_of_call(self, call: cst.Call) -> None:
        known = self.context.heat.reads_of_call(call)
        if known is None or not known[0].reads_params or any(arg.star for arg in call.args):
            return
        facts, own = known
        positional = [arg.value for arg in call.args if arg.keyword is None]
        callee = f"`{self.context.code_for(call.func)}()`"
        found = []
        for name, position in facts.reads_params:
            if position < 0:
                # A global of the callee's module: the same variable here only in that module,
                # where this code does not bind the name itself.
                if own and not self._binds_locally(name):
                    found.append((name, callee, "which reads that global"))
                continue
            value = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)
            if value is None and 0 <= position < len(positional):
                value = positional[position]
            read = dotted_name(value) if value is not None else None
            if read is not None:
                found.append((read, callee, "which it was passed to"))
        for read, _, _ in found:
            self._note_read(read)
        if found:
            self._read_by_call[id(call)] = found

    def _binds_locally(self, name: str) -> bool:
        """Is `name` a local of the function being walked (its parameter, or bound anywhere in it)?"""
        if not self._functions:
            return False
        function = self._functions[-1]
        if function.local_names is None:
            function.local_names = frozenset(names_bound_in(function.node))
        return name in function.local_names

    def _note_read(self, name: str) -> None:
        block, _, names = self._blocks[-1]
        names.add(name)
        function = self._functions[-1] if self._functions else None
        if function is None or block != function.body or function.exited or name in function.rebound:
            return
        if name in function.params or ("." not in name and not self._binds_locally(name)):
            function.param_reads.add(name)  # a parameter, or a global of this module

    def visit_Return(self, node: cst.Return) -> None:
        if not self._functions:
            return
        function = self._functions[-1]
        value = node.value
        if type(value) is cst.Tuple:
            positions = frozenset(
                index for index, element in enumerate(value.elements)
                if (name := dotted_name(element.value)) is not None and self.is_read(name)
            )
            function.returns.append((len(value.elements), positions))
        else:
            name = dotted_name(value) if value is not None else None
            function.returns.append((0, frozenset({-1}) if name is not None and self.is_read(name) else frozenset()))
        function.exited = True

    def visit_Raise(self, node: cst.Raise) -> None:
        if self._functions:
            self._functions[-1].exited = True

    def visit_Yield(self, node: cst.Yield) -> None:
        if self._functions:
            self._functions[-1].generator = True

    # ----- bindings -----

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._forget(target.target)
        for name, _, _ in self.results_read(node):
            self._blocks[-1][2].add(name)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self._forget(node.target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._forget(node.target)

    def _forget(self, target: cst.BaseExpression) -> None:
        names = {name.value for name in target_names(target)}
        name = dotted_name(target)
        if name is not None:
            names.add(name)
        if not names:
            return
        if self._functions:
            self._functions[-1].rebound.update(names)
        for _, _, read in self._blocks:
            for known in [n for n in read if n in names or n.split(".", 1)[0] in names]:
                read.discard(known)
