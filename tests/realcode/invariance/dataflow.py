"""What a run of statements reads and writes, for moving it into a function that behaves the same.

A range of statements taken out of a loop body becomes `outputs = new_function(params)`:
- params: the names of the step's scope (and of enclosing functions) the range reads before it
  surely assigns them; at module level only those it also assigns (the others stay globals);
- outputs: the names it assigns that are read outside the range, or carried to the next
  iteration (a parameter it also assigns that the loop header does not rebind);
and the range is refused when moving it would change what runs: `return`, `yield`, `await`,
`break`/`continue` of the loop outside it, `global`/`nonlocal`, `del` of a name, `exec`,
`locals()` and the like, a zero-argument `super()`, an output assigned only on some paths, or
a closure defined outside the range that reads a name the range assigns.

Names are resolved with libcst's scope analysis, so a `loss` local to a nested function or a
comprehension variable is never confused with the step's own.
"""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import BuiltinScope, GlobalScope, Scope, ScopeProvider

from tests.realcode.invariance.splice import Parsed, walk

SCOPE_DEPENDENT_CALLS = frozenset({"locals", "globals", "vars", "exec", "eval", "dir"})


class Unmovable(Exception):
    """The range cannot be moved without changing behaviour; the message says why."""


@dataclass
class Names:
    """Scope facts of one parsed file: where every read name resolves, and every binding."""

    parsed: Parsed
    resolved: dict[int, set[Scope]] = field(default_factory=dict)   # id(Name) -> scopes of its bindings
    builtin: set[int] = field(default_factory=set)
    scopes: set[Scope] = field(default_factory=set)
    _scope_of: dict = field(default_factory=dict)
    _identifiers: set[str] | None = None

    @classmethod
    def of(cls, parsed: Parsed) -> Names:
        names = cls(parsed)
        mapping = parsed.wrapper.resolve(ScopeProvider)
        names._scope_of = mapping
        names.scopes = {s for s in mapping.values() if s is not None}
        for scope in names.scopes:
            for access in scope.accesses:
                scopes = {r.scope for r in access.referents}
                if any(isinstance(s, BuiltinScope) for s in scopes):
                    names.builtin.add(id(access.node))
                names.resolved[id(access.node)] = {s for s in scopes if not isinstance(s, BuiltinScope)}
        return names

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        return self._scope_of.get(node)

    def parsed_global_scope(self) -> GlobalScope:
        return next(s for s in self.scopes if isinstance(s, GlobalScope))

    def all_identifiers(self) -> set[str]:
        if self._identifiers is None:
            self._identifiers = {node.value for node in self.parsed.nodes if isinstance(node, cst.Name)}
        return self._identifiers

    def fresh(self, stem: str, taken: set[str] = frozenset()) -> str:
        """`stem`, or `stem_2`, `stem_3` ...: a name the file does not use for anything."""
        used = self.all_identifiers() | set(taken) | set(dir(builtins)) | set(keyword.kwlist)
        name, n = stem, 1
        while name in used:
            n += 1
            name = f"{stem}_{n}"
        return name

    def references_outside(self, scope: Scope, name: str, first: int, last: int) -> bool:
        """Is a binding of `name` in `scope` read anywhere outside lines first..last?

        An augmented assignment (`total += x`) reads its target too; libcst records it only as
        a binding. A binding inside a function (`global name`) outside the range counts as well:
        that function and the range share the variable.
        """
        for assignment in scope.assignments[name]:
            for access in assignment.references:
                line = self.parsed.positions[access.node].start.line
                if line < first or line > last:
                    return True
            node = assignment.node
            line = self.parsed.positions[node].start.line
            if first <= line <= last:
                continue
            if isinstance(self.parsed.parent(node), cst.AugAssign):
                return True
            if isinstance(scope, GlobalScope) and any(isinstance(a, cst.FunctionDef)
                                                      for a in self.parsed.ancestors(node)):
                return True
        return False

    def read_in_nested_scope_outside(self, scope: Scope, name: str, first: int, last: int) -> bool:
        """Does a function or lambda outside lines first..last read `name` of `scope`?"""
        for assignment in scope.assignments[name]:
            for access in assignment.references:
                line = self.parsed.positions[access.node].start.line
                if (line < first or line > last) and access.scope is not scope:
                    return True
        return False


@dataclass
class Flow:
    params: list[str]
    outputs: list[str]
    module_reads: list[str]    # names read from the module scope (imports, functions, constants)


def range_flow(names: Names, scope: Scope, statements: list[cst.BaseStatement], *, in_class: bool = False,
               rebound_each_iteration: frozenset[str] = frozenset()) -> Flow:
    """The params and outputs of moving `statements` (consecutive, one block) into a function.

    `in_class`: the new function is a method of the class holding the step (name mangling and
    `super()` keep working there). `rebound_each_iteration`: the target names of the loop that
    repeats the range; a parameter the range reassigns is carried to the next run of the range
    unless that loop rebinds it first.
    """
    first = names.parsed.lines(statements[0])[0]
    last = names.parsed.lines(statements[-1])[1]
    walker = _Walker(names, scope, in_class)
    definite = walker.block(statements, set(), loop_depth=0)
    written = walker.written
    module_level = isinstance(scope, GlobalScope)
    params = [n for n in walker.read_first if not module_level or n in written or n in walker.outer_reads]
    if module_level:
        walker.module_reads = [n for n in walker.read_first if n not in written]
    outputs = []
    for name in written:
        if name in walker.outer_written:
            raise Unmovable(f"assigns `{name}` of an enclosing function")
        if names.read_in_nested_scope_outside(scope, name, first, last):
            raise Unmovable(f"a function defined outside the range reads `{name}`, which the range assigns")
        carried = name in params and name not in rebound_each_iteration
        if carried or names.references_outside(scope, name, first, last):
            if name not in definite and name not in params:
                raise Unmovable(f"`{name}` is read after the range but assigned only on some paths")
            outputs.append(name)
    module_reads = [n for n in walker.module_reads if n not in written]
    return Flow(params, outputs, module_reads)


def module_body_flow(names: Names, statements: list[cst.BaseStatement]) -> tuple[list[str], list[str]]:
    """(names read before surely assigned, names assigned) of module-level statements that move
    into a `main()` function of the same module."""
    walker = _Walker(names, names.parsed_global_scope(), in_class=False, same_module=True)
    walker.block(statements, set(), loop_depth=0)
    return walker.read_first, walker.written


class _Walker:
    """Walks statements in execution order, tracking the names surely assigned so far.

    `same_module`: the statements stay in their module (a `main()` wrapper): `__file__` and
    `del name` keep their meaning there.
    """

    def __init__(self, names: Names, scope: Scope, in_class: bool, same_module: bool = False) -> None:
        self.names = names
        self.scope = scope
        self.in_class = in_class
        self.same_module = same_module
        self.read_first: list[str] = []      # read before surely assigned, in order
        self.written: list[str] = []
        self.outer_reads: set[str] = set()   # read from an enclosing function's scope
        self.outer_written: set[str] = set()
        self.module_reads: list[str] = []

    # -- reads
    def read(self, node: cst.CSTNode | None, defined: set[str]) -> None:
        if node is None:
            return
        for sub in walk(node):
            if isinstance(sub, cst.Call):
                self._check_call(sub)
            elif isinstance(sub, (cst.Yield, cst.Await)):
                if not self._in_nested_function(sub, node):
                    raise Unmovable("the range yields or awaits")
            elif isinstance(sub, cst.Attribute) and not self.in_class:
                attr = sub.attr.value
                if attr.startswith("__") and not attr.endswith("__"):
                    raise Unmovable(f"`.{attr}` is mangled by its class")
            elif isinstance(sub, cst.NamedExpr):
                raise Unmovable("an assignment expression (`:=`)")
            elif isinstance(sub, cst.Name):
                self._read_name(sub, defined)

    def _in_nested_function(self, sub: cst.CSTNode, root: cst.CSTNode) -> bool:
        for ancestor in self.names.parsed.ancestors(sub):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return True
            if ancestor is root:
                return False
        return False

    def _check_call(self, call: cst.Call) -> None:
        if isinstance(call.func, cst.Name):
            if call.func.value in SCOPE_DEPENDENT_CALLS:
                raise Unmovable(f"`{call.func.value}()` depends on the scope it runs in")
            if call.func.value == "super" and not call.args and not self.in_class:
                raise Unmovable("a zero-argument `super()` needs its class")

    def _read_name(self, node: cst.Name, defined: set[str]) -> None:
        key = id(node)
        if key not in self.names.resolved:
            return  # not a read (an attribute's name, a keyword argument, a binding)
        if node.value in ("__class__", "__file__", "__name__") and not self.same_module:
            raise Unmovable(f"`{node.value}` differs in another function or module")
        scopes = self.names.resolved[key]
        if self.scope in scopes:
            if node.value not in defined and node.value not in self.read_first:
                self.read_first.append(node.value)
        elif any(isinstance(s, GlobalScope) for s in scopes) or (not scopes and key not in self.names.builtin):
            if node.value not in self.module_reads:
                self.module_reads.append(node.value)
        elif scopes and not any(self._is_nested(s) for s in scopes):
            # a closure's name from a function around the step's function
            self.outer_reads.add(node.value)
            if node.value not in self.read_first:
                self.read_first.append(node.value)

    def _is_nested(self, scope: Scope) -> bool:
        """Is `scope` inside the step's scope (a comprehension, lambda or function of the range)?"""
        parent = scope
        while parent is not None and not isinstance(parent, GlobalScope):
            if parent is self.scope:
                return True
            parent = getattr(parent, "parent", None)
        return False

    # -- writes
    def write(self, target: cst.BaseExpression, defined: set[str], surely: bool) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, defined, surely)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.write(element.value, defined, surely)
        elif isinstance(target, cst.StarredElement):
            self.write(target.value, defined, surely)
        else:
            self.read(target, defined)  # `a.b = v`, `a[i] = v` read `a` (and `i`)

    def _bind(self, name: str, defined: set[str], surely: bool) -> None:
        if name not in self.scope.assignments:
            self.outer_written.add(name)
        if name not in self.written:
            self.written.append(name)
        if surely:
            defined.add(name)

    # -- statements
    def block(self, statements, defined: set[str], loop_depth: int) -> set[str]:
        for statement in statements:
            defined = self.statement(statement, defined, loop_depth)
        return defined

    def _suite(self, suite: cst.BaseSuite | None, defined: set[str], loop_depth: int) -> set[str]:
        if suite is None:
            return set(defined)
        body = suite.body
        if isinstance(suite, cst.SimpleStatementSuite):
            return self._small_statements(body, set(defined), loop_depth)
        return self.block(body, set(defined), loop_depth)

    def statement(self, node: cst.BaseStatement, defined: set[str], loop_depth: int) -> set[str]:
        if isinstance(node, cst.SimpleStatementLine):
            return self._small_statements(node.body, defined, loop_depth)
        if isinstance(node, cst.If):
            self.read(node.test, defined)
            body = self._suite(node.body, defined, loop_depth)
            orelse = node.orelse
            if orelse is None:
                other = set(defined)
            elif isinstance(orelse, cst.If):
                other = self.statement(orelse, set(defined), loop_depth)
            else:
                other = self._suite(orelse.body, defined, loop_depth)
            return body & other
        if isinstance(node, cst.For):
            if node.asynchronous is not None:
                raise Unmovable("an `async for`")
            self.read(node.iter, defined)
            inner = set(defined)
            self.write(node.target, inner, surely=True)
            self._suite(node.body, inner, loop_depth + 1)
            self.write(node.target, set(), surely=False)
            if node.orelse is not None:
                self._suite(node.orelse.body, defined, loop_depth)
            return defined
        if isinstance(node, cst.While):
            self.read(node.test, defined)
            self._suite(node.body, defined, loop_depth + 1)
            if node.orelse is not None:
                self._suite(node.orelse.body, defined, loop_depth)
            return defined
        if isinstance(node, cst.With):
            if node.asynchronous is not None:
                raise Unmovable("an `async with`")
            defined = set(defined)
            for item in node.items:
                self.read(item.item, defined)
                if item.asname is not None:
                    self.write(item.asname.name, defined, surely=True)
            return self._suite(node.body, defined, loop_depth)
        if isinstance(node, cst.Try):
            body = self._suite(node.body, defined, loop_depth)
            if node.orelse is not None:
                body = self._suite(node.orelse.body, body, loop_depth)
            results = [body]
            for handler in node.handlers:
                inner = set(defined)
                self.read(handler.type, inner)
                if handler.name is not None:
                    self.write(handler.name.name, inner, surely=True)
                results.append(self._suite(handler.body, inner, loop_depth))
            result = set.intersection(*results)
            if node.finalbody is not None:
                result |= self._suite(node.finalbody.body, defined, loop_depth)
            return result
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            for decorator in node.decorators:
                self.read(decorator.decorator, defined)
            if isinstance(node, cst.ClassDef):
                for base in (*node.bases, *node.keywords):
                    self.read(base.value, defined)
            else:
                for param in (*node.params.params, *node.params.kwonly_params, *node.params.posonly_params):
                    self.read(param.default, defined)
            # The body runs later; the names it reads from the step must exist by then.
            self.read(node.body, defined)
            defined = set(defined)
            self._bind(node.name.value, defined, surely=True)
            return defined
        raise Unmovable(f"a `{type(node).__name__}` statement")

    def _small_statements(self, smalls, defined: set[str], loop_depth: int) -> set[str]:
        for small in smalls:
            if isinstance(small, cst.Assign):
                self.read(small.value, defined)
                for target in small.targets:
                    self.write(target.target, defined, surely=True)
            elif isinstance(small, cst.AugAssign):
                self.read(small.value, defined)
                if isinstance(small.target, cst.Name):
                    name = small.target.value
                    resolved = self.scope in self.names.scopes and name in self.scope.assignments
                    if resolved and name not in defined and name not in self.read_first:
                        self.read_first.append(name)
                    elif not resolved:
                        self.outer_written.add(name)
                    self._bind(name, defined, surely=True)
                else:
                    self.read(small.target, defined)
            elif isinstance(small, cst.AnnAssign):
                self.read(small.value, defined)
                if small.value is not None:
                    self.write(small.target, defined, surely=True)
            elif isinstance(small, (cst.Return,)):
                raise Unmovable("a `return` leaves the step's function")
            elif isinstance(small, (cst.Break, cst.Continue)):
                if loop_depth == 0:
                    raise Unmovable(f"a `{type(small).__name__.lower()}` of the step's loop")
            elif isinstance(small, (cst.Global, cst.Nonlocal)):
                raise Unmovable(f"a `{type(small).__name__.lower()}` statement")
            elif isinstance(small, cst.Del):
                for target in _del_targets(small.target):
                    if isinstance(target, cst.Name) and not self.same_module:
                        raise Unmovable(f"`del {target.value}`")
                    self.read(target, defined)
                    if isinstance(target, cst.Name):
                        self._bind(target.value, set(), surely=False)
                        defined.discard(target.value)
            elif isinstance(small, (cst.Import, cst.ImportFrom)):
                if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                    raise Unmovable("a star import")
                for alias in small.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    while isinstance(bound, cst.Attribute):
                        bound = bound.value
                    self._bind(bound.value, defined, surely=True)
            else:  # Expr, Assert, Raise, Pass
                self.read(small, defined)
        return defined


def _del_targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        found = []
        for element in target.elements:
            found += _del_targets(element.value)
        return found
    return [target]
