"""What each name of a function (or module) is bound to, statement by statement.

A branch's frequency often hangs on a name: `if is_metric_step:` runs as often as the
`step % every == 0` it was bound to, `if self.fp16:` as often as configuration changes. Trackers
ask here instead of re-walking the function; the answer is kept once per module (`memo`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from verifier.static.names import dotted_name

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext

# name -> (the value bound, or None for a loop target, a binding in an `except` handler or
# anything not a plain assignment; the ids of the loops around the binding)
Bindings = dict[str, list[tuple[cst.BaseExpression | None, frozenset[int]]]]


# Marks the statements of an `except` handler in the walk (a loop's id is never 0).
_HANDLER = 0


def statement_bindings(context: ModuleContext, scope: cst.CSTNode) -> Bindings:
    """Every binding in `scope` (a function, or the module), computed once per module."""
    return context.memo(("statement-bindings", id(scope)), lambda: _collect(scope))


def _collect(scope: cst.CSTNode) -> Bindings:
    """Every binding in `scope` (a function, or the module): name -> (the value bound, or None for
    a loop target or anything not a plain assignment; the ids of the loops around the binding)."""
    found: Bindings = {}

    def bind(target: cst.BaseExpression, value: cst.BaseExpression | None, loops: frozenset[int]) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                bind(element.value, None, loops)
            return
        if type(target) is cst.StarredElement:
            bind(target.value, None, loops)
            return
        name = dotted_name(target)
        if _HANDLER in loops:
            # `has_oom = True` in an `except` handler: what the name holds says whether an
            # exception was raised, never a value fixed for the run.
            value = None
        if name is not None:
            found.setdefault(name, []).append((value, loops - {_HANDLER}))
        elif type(target) is cst.Subscript:
            base = dotted_name(target.value)
            if base is not None:
                found.setdefault(base, []).append((None, loops - {_HANDLER}))

    # Statements only: a binding is a statement (or a loop or `with` header); expressions are
    # never entered, nor are nested functions and classes (their names bind, their bodies not).
    pending: list[tuple[cst.CSTNode, frozenset[int]]] = [(scope.body if type(scope) is not cst.Module else scope, frozenset())]
    while pending:
        node, loops = pending.pop()
        kind = type(node)
        if kind in (cst.Module, cst.IndentedBlock, cst.SimpleStatementLine, cst.SimpleStatementSuite):
            pending.extend((statement, loops) for statement in node.body)
        elif kind is cst.Assign:
            for target in node.targets:
                bind(target.target, node.value, loops)
        elif kind is cst.AugAssign:
            bind(node.target, None, loops)
        elif kind is cst.AnnAssign:
            if node.value is not None:
                bind(node.target, node.value, loops)
        elif kind in (cst.FunctionDef, cst.ClassDef):
            found.setdefault(node.name.value, []).append((None, loops - {_HANDLER}))
        elif kind in (cst.For, cst.While):
            inner = loops | {id(node)}
            if kind is cst.For:
                bind(node.target, None, inner)
            pending.append((node.body, inner))
            if node.orelse is not None:
                pending.append((node.orelse.body, loops))
        elif kind is cst.If:
            pending.append((node.body, loops))
            if node.orelse is not None:
                pending.append((node.orelse if type(node.orelse) is cst.If else node.orelse.body, loops))
        elif kind is cst.With:
            for item in node.items:
                if item.asname is not None:
                    bind(item.asname.name, None, loops)
            pending.append((node.body, loops))
        elif kind in (cst.Try, cst.TryStar):
            pending.append((node.body, loops))
            for handler in node.handlers:
                if handler.name is not None:
                    bind(handler.name.name, None, loops)
                pending.append((handler.body, loops | {_HANDLER}))
            for extra in (node.orelse, node.finalbody):
                if extra is not None:
                    pending.append((extra.body, loops))
    return found
