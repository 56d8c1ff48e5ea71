"""What a script's command line holds when nobody passes an option: `argparse` defaults.

`if args.gradient_norm > 0:` around a clip is run-constant configuration, but with
`parser.add_argument("--gradient_norm", type=float, default=-1.0)` the default run never takes
that branch: code under it is opt-in, and a finding there rests on a configuration the user has to
choose. Only literal defaults are read (numbers, strings, booleans, None, `store_true`/`store_false`);
a test is evaluated in three values (true, false, unknown), so anything else stays unknown.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping

import libcst as cst

from verifier.static.names import keyword_arg, method_name
from verifier.static.walk import iter_descendants

_UNKNOWN = object()
# More than one `add_argument` for a name with different defaults: nothing is known.
_AMBIGUOUS = object()
_COMPARE = {
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}


class CommandLine:
    """The defaults of a module's options and the names its parsed options are bound to
    (`args = parser.parse_args()`)."""

    def __init__(self, module: cst.Module) -> None:
        self.defaults: dict[str, object] = {}
        self.namespaces: set[str] = set()
        calls = [node for node in iter_descendants(module) if type(node) is cst.Call]
        self.defaults = _argument_defaults(calls)
        for node in iter_descendants(module):
            if type(node) is cst.Assign and type(node.value) is cst.Call and method_name(node.value) == "parse_args":
                self.namespaces.update(t.target.value for t in node.targets if type(t.target) is cst.Name)

    def holds_by_default(self, test: cst.BaseExpression) -> bool | None:
        """Whether `test` is true when every option keeps its default; None when not known."""
        if not self.defaults or not self.namespaces:
            return None
        value = _value(test, self.defaults, self.namespaces)
        return None if value is _UNKNOWN else bool(value)


def _argument_defaults(calls: list[cst.Call]) -> dict[str, object]:
    """`{"gradient_norm": -1.0, "amp": False, ...}` from the module's `add_argument` calls."""
    defaults: dict[str, object] = {}
    for node in calls:
        if method_name(node) != "add_argument":
            continue
        dest = _destination(node)
        if dest is None:
            continue
        value = _default(node)
        if value is _UNKNOWN:
            continue
        known = defaults.get(dest, value)
        defaults[dest] = value if known == value and type(known) is type(value) else _AMBIGUOUS
    return {name: value for name, value in defaults.items() if value is not _AMBIGUOUS}


def _destination(call: cst.Call) -> str | None:
    dest = keyword_arg(call, "dest")
    if dest is not None:
        return _literal(dest.value) if type(dest.value) is cst.SimpleString else None
    for arg in call.args:
        if arg.keyword is None and type(arg.value) is cst.SimpleString:
            text = _literal(arg.value)
            if isinstance(text, str) and text.startswith("--"):
                return text[2:].replace("-", "_")
    return None


def _default(call: cst.Call) -> object:
    action = keyword_arg(call, "action")
    kind = _literal(action.value) if action is not None else None
    if kind == "store_true":
        return False
    if kind == "store_false":
        return True
    if action is not None:
        return _UNKNOWN
    default = keyword_arg(call, "default")
    if default is None:
        return None  # argparse's own default
    value = _literal(default.value)
    if value is _UNKNOWN:
        return _UNKNOWN
    kind_arg = keyword_arg(call, "type")
    if kind_arg is not None and type(kind_arg.value) is cst.Name and kind_arg.value.value in ("int", "float"):
        # A string default goes through `type` (`default="1e-3"`); numbers are kept as given.
        if isinstance(value, str):
            try:
                return float(value) if kind_arg.value.value == "float" else int(value)
            except ValueError:
                return _UNKNOWN
    return value


def _literal(node: cst.BaseExpression) -> object:
    if type(node) in (cst.SimpleString, cst.Integer, cst.Float) or (
        type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) in (cst.Integer, cst.Float)
    ):
        try:
            return ast.literal_eval(cst.Module(body=()).code_for_node(node))
        except (ValueError, SyntaxError):
            return _UNKNOWN
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return _UNKNOWN


def _value(node: cst.BaseExpression, defaults: Mapping[str, object], namespaces: set[str]) -> object:
    kind = type(node)
    if kind is cst.Attribute and type(node.value) is cst.Name and node.value.value in namespaces:
        return defaults.get(node.attr.value, _UNKNOWN)
    if kind is cst.UnaryOperation and type(node.operator) is cst.Not:
        inner = _value(node.expression, defaults, namespaces)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if kind is cst.BooleanOperation:
        left, right = _value(node.left, defaults, namespaces), _value(node.right, defaults, namespaces)
        if type(node.operator) is cst.And:
            if (left is not _UNKNOWN and not left) or (right is not _UNKNOWN and not right):
                return False
            return _UNKNOWN if _UNKNOWN in (left, right) else right
        if (left is not _UNKNOWN and left) or (right is not _UNKNOWN and right):
            return True
        return _UNKNOWN if _UNKNOWN in (left, right) else right
    if kind is cst.Comparison and len(node.comparisons) == 1:
        target = node.comparisons[0]
        left, right = _value(node.left, defaults, namespaces), _value(target.comparator, defaults, namespaces)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        if type(target.operator) is cst.Is:
            return left is right
        if type(target.operator) is cst.IsNot:
            return left is not right
        compare = _COMPARE.get(type(target.operator))
        if compare is None:
            return _UNKNOWN
        try:
            return compare(left, right)
        except TypeError:
            return _UNKNOWN
    return _literal(node)
