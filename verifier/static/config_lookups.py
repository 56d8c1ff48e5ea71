"""Settings a program reads from its configuration with a literal default: `self.get_conf("torch_profiler", False)`.

A trainer driven by a configuration file looks each setting up with the value it takes when the
file does not name it (`get_conf(key, False)`, `config.get(key, 0)`, `getattr(args, key, None)`).
A run nobody configured for it takes that default, exactly as under an argparse option's default
(`cli_defaults`): a branch the default keeps closed is opt-in. A setting is followed through a
local name bound once in the function (`do_profiler = self.get_conf(...)`) and an attribute bound
once anywhere in the class the branch is in (`self.torch_profiler = None if not do_profiler else
profile()`), to a lookup, a literal, or a choice between them that the defaults decide (a name
bound once to a literal holds it: `scaler = None` makes `if scaler is not None:` closed). Anything
else is not known: a name or attribute bound twice, a call's result, a lookup whose receiver is
not named like a configuration (a batch's `batch.get("mask", None)` says what the data holds, not
what the run is set to).
"""

from __future__ import annotations

import re

import libcst as cst

from verifier.static.names import dotted_name
from verifier.static.walk import children, iter_descendants

# Methods that look a setting up by its name.
_LOOKUP_METHODS = frozenset({"get_conf", "get_config", "get_setting", "get_option"})
# Receivers of `.get(key, default)` / `getattr(x, key, default)` that hold the run's configuration.
_CONFIGURATION = re.compile(
    r"^(config|cfg|conf|configs|opt|opts|options|args|hparams|hp|settings|kwargs|params|train_config|job_config)$",
    re.IGNORECASE,
)
_UNKNOWN = object()
_MAX_DEPTH = 8


class ConfiguredDefaults:
    """One module's looked-up settings, asked branch by branch (each scope's bindings of a name
    are found once: a trainer class of thousands of lines has hundreds of branches)."""

    def __init__(self) -> None:
        self._bindings: dict[int, dict[str, list]] = {}
        self._scopes: list[cst.CSTNode] = []  # keeps the scopes alive while their ids are keys

    def holds(self, test: cst.BaseExpression, function: cst.FunctionDef | None, owner: cst.ClassDef | None) -> bool | None:
        """Whether `test`, in `function` of class `owner`, is true when every setting it reads
        keeps the default its lookup names; None when not known."""
        value = _truth(test, function, owner, 0, self)
        return None if value is _UNKNOWN else value

    def bindings_of(self, scope: cst.CSTNode, name: str, *, inner_functions: bool) -> list:
        """The bindings of `name` in `scope` (`_bindings_in`, walked once per scope)."""
        found = self._bindings.get(id(scope))
        if found is None:
            found = self._bindings[id(scope)] = _bindings_in(scope, inner_functions=inner_functions)
            self._scopes.append(scope)
        return found.get(name, [])


def _truth(test: cst.BaseExpression, function, owner, depth: int, memo: ConfiguredDefaults) -> object:
    kind = type(test)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = _truth(test.expression, function, owner, depth, memo)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if kind is cst.BooleanOperation:
        left, right = _truth(test.left, function, owner, depth, memo), _truth(test.right, function, owner, depth, memo)
        if type(test.operator) is cst.And:
            if False in (left, right):
                return False
            return _UNKNOWN if _UNKNOWN in (left, right) else True
        if True in (left, right):
            return True
        return _UNKNOWN if _UNKNOWN in (left, right) else False
    if kind is cst.Comparison and len(test.comparisons) == 1:
        return _compared(test, function, owner, depth, memo)
    value = _setting(test, function, owner, depth, memo)
    return _UNKNOWN if value is _UNKNOWN else bool(value)


def _compared(test: cst.Comparison, function, owner, depth: int, memo: ConfiguredDefaults) -> object:
    target = test.comparisons[0]
    operator = type(target.operator)
    left = _setting(test.left, function, owner, depth, memo)
    right = _literal(target.comparator)
    if left is _UNKNOWN or right is _UNKNOWN:
        return _UNKNOWN
    if operator in (cst.Is, cst.IsNot):
        if right is not None:
            return _UNKNOWN
        return (left is None) is (operator is cst.Is)
    try:
        if operator is cst.Equal:
            return left == right
        if operator is cst.NotEqual:
            return left != right
        if operator is cst.GreaterThan:
            return left > right
        if operator is cst.LessThan:
            return left < right
        if operator is cst.GreaterThanEqual:
            return left >= right
        if operator is cst.LessThanEqual:
            return left <= right
    except TypeError:
        return _UNKNOWN
    return _UNKNOWN


def _setting(node: cst.BaseExpression, function, owner, depth: int, memo: ConfiguredDefaults) -> object:
    """The default a name or `self.` attribute holds when it is a looked-up setting."""
    if depth > _MAX_DEPTH:
        return _UNKNOWN
    if type(node) is cst.Name and function is not None:
        bound = memo.bindings_of(function, node.value, inner_functions=False)
        return _value(bound[0][0], bound[0][1], owner, depth + 1, memo) if len(bound) == 1 else _UNKNOWN
    name = dotted_name(node) if type(node) is cst.Attribute else None
    if name is not None and name.startswith("self.") and name.count(".") == 1 and owner is not None:
        bound = memo.bindings_of(owner, name, inner_functions=True)
        return _value(bound[0][0], bound[0][1], owner, depth + 1, memo) if len(bound) == 1 else _UNKNOWN
    return _UNKNOWN


def _value(value: cst.BaseExpression | None, function, owner, depth: int, memo: ConfiguredDefaults) -> object:
    if value is None:
        return _UNKNOWN
    literal = _literal(value)
    if literal is not _UNKNOWN:
        return literal
    if type(value) is cst.Call:
        return _looked_up_default(value)
    if type(value) is cst.IfExp:
        chosen = _truth(value.test, function, owner, depth, memo)
        if chosen is _UNKNOWN:
            return _UNKNOWN
        return _value(value.body if chosen else value.orelse, function, owner, depth + 1, memo)
    return _setting(value, function, owner, depth, memo)


def _looked_up_default(call: cst.Call) -> object:
    """The literal default of a configuration lookup, else _UNKNOWN."""
    func = call.func
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    keyword = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if type(func) is cst.Name and func.value == "getattr" and len(positional) == 3:
        receiver, key, default = positional
        if _configuration(receiver) and type(key) is cst.SimpleString:
            return _literal(default)
        return _UNKNOWN
    if type(func) is not cst.Attribute or not positional or type(positional[0]) is not cst.SimpleString:
        return _UNKNOWN
    method = func.attr.value
    if method not in _LOOKUP_METHODS and not (method == "get" and _configuration(func.value)):
        return _UNKNOWN
    default = positional[1] if len(positional) == 2 else keyword.get("default", keyword.get("fallback"))
    return _literal(default) if default is not None else _UNKNOWN


def _configuration(receiver: cst.BaseExpression) -> bool:
    name = dotted_name(receiver)
    return name is not None and bool(_CONFIGURATION.match(name.rsplit(".", 1)[-1]))


def _literal(node: cst.BaseExpression | None) -> object:
    kind = type(node)
    if kind is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if kind is cst.Integer:
        return int(node.value, 0)
    if kind is cst.Float:
        return float(node.value)
    if kind is cst.SimpleString and node.prefix.lower() in ("", "r"):
        return node.raw_value
    if kind is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) in (cst.Integer, cst.Float):
        inner = _literal(node.expression)
        return -inner if inner is not _UNKNOWN else _UNKNOWN
    return _UNKNOWN


def _bindings_in(scope: cst.CSTNode, *, inner_functions: bool) -> dict[str, list]:
    """Every binding in `scope`, by the name it binds (a local name, or `self.attr`): (value, the
    function it is in); a binding that is not a plain assignment (`+=`, a loop target, a tuple)
    has no value (None), so the name is then not known. One walk per scope."""
    found: dict[str, list] = {}

    def bind(name: str | None, value: cst.BaseExpression | None, function: object) -> None:
        if name is not None:
            found.setdefault(name, []).append((value, function))

    pending: list[tuple[cst.CSTNode, object]] = [(scope, scope if type(scope) is cst.FunctionDef else None)]
    while pending:
        node, function = pending.pop()
        kind = type(node)
        if kind is cst.FunctionDef and node is not scope:
            if not inner_functions:
                continue
            function = node
        elif kind in (cst.Lambda, cst.ClassDef) and node is not scope:
            continue
        if kind is cst.Assign:
            for target in node.targets:
                if type(target.target) in (cst.Tuple, cst.List):
                    for name in _names_within(target.target):
                        bind(name, None, function)
                else:
                    bind(dotted_name(target.target), node.value, function)
        elif kind is cst.AnnAssign:
            bind(dotted_name(node.target), node.value, function)
        elif kind is cst.AugAssign:
            bind(dotted_name(node.target), None, function)
        elif kind in (cst.For, cst.NamedExpr):
            for name in _names_within(node.target):
                bind(name, None, function)
        elif kind is cst.With:
            for item in node.items:
                if item.asname is not None:
                    for name in _names_within(item.asname.name):
                        bind(name, None, function)
        pending.extend((child, function) for child in children(node))
    return found


def _names_within(target: cst.CSTNode) -> set[str]:
    """The names and `self.` attributes a binding target binds (all of a tuple's parts)."""
    return {name for node in (target, *iter_descendants(target)) if (name := dotted_name(node)) is not None}
