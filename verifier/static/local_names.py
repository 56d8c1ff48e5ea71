"""The names a function binds in its own scope; any other name it reads is its module's (a global).

Python decides a name's scope from the whole body: assigned anywhere in a function, it is local
everywhere in it, before the assignment too. Names bound in nested functions, lambdas and
comprehensions are counted as well: erring towards "local" only withholds a fact from the
value model, never lends it a wrong one.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from verifier.static.walk import iter_descendants


def names_bound_in(function: cst.FunctionDef | cst.Lambda) -> set[str]:
    """Every name `function` (or code nested in it) binds, its parameters and `global` names included."""
    bound = {param.name.value for param in _params(function.params)}
    for node in iter_descendants(function.body):
        _note_binding(node, bound)
    return bound


def names_bound_before(function: cst.FunctionDef, node: cst.CSTNode) -> set[str]:
    """The names the body of `function` binds in the code that comes before `node` in the text
    (not its parameters): what a test at `node` outside any loop may see bound again."""
    bound: set[str] = set()
    for current in iter_descendants(function.body):
        if current is node:
            break
        _note_binding(current, bound)
    return bound


def _note_binding(node: cst.CSTNode, bound: set[str]) -> None:
    kind = type(node)
    if kind is cst.AssignTarget:
        _targets(node.target, bound)
    elif kind in (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr):
        _targets(node.target, bound)
    elif kind is cst.AsName:
        _targets(node.name, bound)  # `with ... as x`, `except E as x`, `import a as x`
    elif kind is cst.Del:
        _targets(node.target, bound)
    elif kind in (cst.FunctionDef, cst.ClassDef):
        bound.add(node.name.value)
    elif kind is cst.Param:
        bound.add(node.name.value)
    elif kind is cst.ImportAlias and node.asname is None:
        # `import os.path` binds `os`; `from m import x` binds `x`.
        name = node.name
        while type(name) is cst.Attribute:
            name = name.value
        if type(name) is cst.Name:
            bound.add(name.value)
    elif kind in (cst.Global, cst.Nonlocal):
        bound.update(item.name.value for item in node.names)
    elif kind in (cst.MatchAs, cst.MatchStar) and node.name is not None:
        bound.add(node.name.value)
    elif kind is cst.MatchMapping and node.rest is not None:
        bound.add(node.rest.value)


def _params(params: cst.Parameters) -> list[cst.Param]:
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            found.append(star)
    return found


def target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names an assignment target binds (`a`, `a, (b, *c)`); `x.attr` and `x[i]` bind none."""
    kind = type(target)
    if kind is cst.Name:
        yield target
    elif kind in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from target_names(element.value)
    elif kind is cst.StarredElement:
        yield from target_names(target.value)


def _targets(target: cst.BaseExpression, bound: set[str]) -> None:
    bound.update(name.value for name in target_names(target))
