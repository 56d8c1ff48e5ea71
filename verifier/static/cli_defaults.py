"""What a script's command line holds when nobody passes an option: `argparse` defaults.

`if args.gradient_norm > 0:` around a clip is run-constant configuration, but with
`parser.add_argument("--gradient_norm", type=float, default=-1.0)` the default run never takes
that branch: code under it is opt-in, and a finding there rests on a configuration the user has to
choose. Only literal defaults are read (numbers, strings, booleans, None, `store_true`/`store_false`);
a test is evaluated in three values (true, false, unknown), so anything else stays unknown.

Options are often parsed in one module and read in another (`run.py` parses, `exp/train.py`
reads `self.args.use_amp`), and trainers read fields of a config dataclass defined elsewhere
(`use_liger_kernel: bool = field(default=False)`), or a yacs tree of defaults
(`_C = CfgNode(); _C.TRAIN.ENABLE = True`, read as `cfg.TRAIN.ENABLE`). `project_defaults` reads
them across the project's files before the analysis; a module without options of its own
evaluates tests on conventional configuration objects (`args`, `self.args`, `cfg`, `config`, ...,
and names ending in one: `train_config`, `self.model_args`) and their sections
(`config.general.ignore_sanity_checks`) against them.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import libcst as cst

from verifier.static.constructor_switches import project_switches
from verifier.static.names import code_of, dotted_name
from verifier.static.python_literals import UNKNOWN, literal, parsed
from verifier.static.walk import iter_descendants

_UNKNOWN = UNKNOWN
# More than one `add_argument` for a name with different defaults: nothing is known.
_AMBIGUOUS = object()
_COMPARE = {
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}


# Where a module without options of its own keeps the project's configuration.
CONFIG_OBJECTS = frozenset(
    {"args", "opt", "opts", "cfg", "config", "hparams", "flags", "FLAGS",
     "self.args", "self.opt", "self.cfg", "self.config", "self.hparams"}
)
# Any other name of a configuration object (`train_config.save_metrics`, `self.model_args.x`,
# `training_args.fp16`): its last part is, or ends in `_`, one of the conventional names.
_CONFIG_NAMED = re.compile(r"(?:^|_)(?:config|cfg|conf|args|opts?|options|hparams|settings|flags)$", re.IGNORECASE)


class _ConfigurationObjects:
    """The names the project's defaults are read through in a module without options of its own:
    the conventional objects and anything named like one."""

    def __contains__(self, prefix: object) -> bool:
        return isinstance(prefix, str) and (
            prefix in CONFIG_OBJECTS or bool(_CONFIG_NAMED.search(prefix.rsplit(".", 1)[-1]))
        )

    def __bool__(self) -> bool:
        return True


# What a module must say for `project_defaults` to parse it.
_MARKERS = ("add_argument(", "@dataclass", "field(default", "CfgNode(", "CN(")
# The constructors of a yacs configuration tree (`from yacs.config import CfgNode as CN`).
_CONFIG_TREES = frozenset({"CfgNode", "CN"})


class CommandLine:
    """The defaults of a module's options and the names its parsed options are bound to
    (`args = parser.parse_args()`); without options of its own, the project's defaults read
    through the conventional configuration objects."""

    def __init__(
        self, text: str, project: tuple[tuple[str, object], ...] = (), module: cst.Module | None = None
    ) -> None:
        # `ComputeLoss(autobalance)`: a constructor's switch that holds (`constructor_switches`).
        self.switches = {name: value for name, value in project if name.endswith(")")}
        project = tuple((name, value) for name, value in project if not name.endswith(")"))
        tree = parsed(text) if "add_argument(" in text else None
        self.defaults: dict[str, object] = {}
        self.namespaces: set[str] | _ConfigurationObjects = set()
        for node in ast.walk(tree) if tree is not None else ():
            if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "add_argument":
                for name, value in _ast_option(node):
                    known = self.defaults.get(name, value)
                    self.defaults[name] = value if known == value and type(known) is type(value) else _AMBIGUOUS
            elif type(node) is ast.Assign and type(node.value) is ast.Call and type(node.value.func) is ast.Attribute \
                    and node.value.func.attr == "parse_args":
                self.namespaces.update(t.id for t in node.targets if type(t) is ast.Name)
        if tree is not None and self.defaults:
            self.namespaces.update(_namespaces_through_calls(tree))
            for name, value in _derived_options(tree, self.defaults):
                self.defaults.setdefault(name, value)  # `args.prefetcher = not args.no_prefetcher`
        self.defaults = {name: value for name, value in self.defaults.items() if value is not _AMBIGUOUS}
        if not self.defaults and project:
            self.defaults = dict(project)
            self.namespaces = _ConfigurationObjects()
        # `--do_train` is off by default and passed by every command that trains: its default
        # describes no run of the script, so what it guards is no opt-in setting.
        self.defaults = {
            name: value for name, value in self.defaults.items() if not _TRAINING_MODE.match(name.rsplit(".", 1)[-1])
        }
        # `self.use_amp = args.use_amp` in a constructor: the attribute holds that option.
        self.copies: dict[str, str] = {}
        if self.defaults and "self." in text:
            self.copies = self._copied_options(module if module is not None else cst.parse_module(text))
        self._text = text
        self._constants: dict[str, object] | None = None

    def constant(self, name: str) -> object:
        """The literal a module-level name is bound to once and never again (`HF_MODE = False`,
        a script's own switch, edited rather than passed); `UNKNOWN` otherwise."""
        if self._constants is None:
            self._constants = module_constants(self._text)
        return self._constants.get(name, _UNKNOWN)

    def holds_by_default(self, test: cst.BaseExpression, owner: str | None = None) -> bool | None:
        """Whether `test` is true when every option keeps its default, every switch of the
        class `owner` (the one the test is in) its constructor's default, and every module
        constant its literal; None when not known."""
        value = _value(test, self, owner)
        return None if value is _UNKNOWN else bool(value)

    def is_by_default(self, node: cst.BaseExpression, value: object) -> bool:
        """Whether `node` (`args.log_steps`, a literal) holds `value` when no option is passed."""
        if not self.defaults or not self.namespaces:
            return _literal(node) == value
        found = _value(node, self)
        return found is not _UNKNOWN and type(found) is type(value) and found == value

    def _copied_options(self, module: cst.Module) -> dict[str, str]:
        """`self.NAME = args.PATH` (once, or always the same) with a known default: `self.NAME`
        reads that option."""
        copies: dict[str, str] = {}
        for node in iter_descendants(module):
            if type(node) is not cst.Assign or len(node.targets) != 1 or type(node.value) is not cst.Attribute:
                continue
            target, source = dotted_name(node.targets[0].target) or "", dotted_name(node.value)
            if target.count(".") != 1 or not target.startswith("self.") or source is None:
                continue
            if _option_value(source, self.defaults, self.namespaces) is not _UNKNOWN:
                copies[target] = source if copies.get(target, source) == source else ""
        return {name: source for name, source in copies.items() if source}


@dataclass(frozen=True)
class SourceDefaults:
    """`defaults_defined_in` of one source, as the results cache keeps it."""

    definitions: tuple[tuple[str, bool | int | float | str | None], ...]


def project_defaults(sources: Iterable[str]) -> tuple[tuple[str, object], ...]:
    """The configuration defaults every given source that defines them agrees on: argparse
    options and the fields of config classes (`@dataclass`, or a base named `*Config`,
    `*Arguments`, `*Args`) with literal defaults, and the constructor switches nothing in the
    project sets (`constructor_switches`). A name two definitions disagree on is left out.
    Read with Python's own parser (a quick look before the analysis; nothing is run)."""
    texts = list(sources)
    return with_switches(agreed_defaults(map(defaults_defined_in, texts)), project_switches(texts).kept)


def with_switches(
    defaults: tuple[tuple[str, object], ...], switches: tuple[tuple[str, object], ...]
) -> tuple[tuple[str, object], ...]:
    """Both in one tuple, ordered by name (a switch's name, `Class(attribute)`, is no option's)."""
    return tuple(sorted((*defaults, *switches), key=lambda item: item[0]))


def defaults_defined_in(text: str) -> tuple[tuple[str, object], ...]:
    """One source's part of `project_defaults`: each literal default it defines, in order (a
    name may come twice). Depends on the text alone, so a results cache can keep it."""
    if not may_define_defaults(text):
        return ()
    tree = parsed(text)
    return tuple(_defined_in(tree, text)) if tree is not None else ()


def may_define_defaults(text: str) -> bool:
    """False for a source that certainly defines no default (most of them: nothing to parse)."""
    return any(marker in text for marker in _MARKERS)


def agreed_defaults(definitions: Iterable[Iterable[tuple[str, object]]]) -> tuple[tuple[str, object], ...]:
    """The defaults the sources' definitions agree on, by name."""
    found: dict[str, object] = {}
    for name, value in (pair for source in definitions for pair in source):
        known = found.get(name, value)
        found[name] = value if known == value and type(known) is type(value) else _AMBIGUOUS
    return tuple(sorted(((k, v) for k, v in found.items() if v is not _AMBIGUOUS), key=lambda item: item[0]))


def _defined_in(tree: ast.AST, text: str) -> Iterator[tuple[str, object]]:
    yield from _config_tree_defaults(tree)
    if "add_argument(" in text:
        options: dict[str, object] = {}
        for node in ast.walk(tree):
            if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "add_argument":
                for name, value in _ast_option(node):
                    options[name] = value if options.get(name, value) == value else _AMBIGUOUS
                    yield name, value
        yield from _derived_options(tree, options)
    for node in _statements(tree):
        if type(node) is ast.ClassDef and _ast_is_config_class(node):
            for statement in node.body:
                if type(statement) is ast.AnnAssign and type(statement.target) is ast.Name and statement.value is not None:
                    value = _ast_field_default(statement.value)
                    if value is not _UNKNOWN:
                        yield statement.target.id, value


def _derived_options(tree: ast.AST, options: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    """`args.prefetcher = not args.no_prefetcher` after parsing: a setting the script derives from
    its options, once, in the same module, holds what its expression gives on their defaults. An
    attribute bound more than once (`args.distributed = False`, then set from the environment),
    or by anything but options, literals and `not`/`and`/`or`/comparisons, is not known."""
    # Statements that run whenever their function (or the module) does: not under a branch.
    unconditional = {
        id(statement) for scope in ast.walk(tree) if type(scope) in (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)
        for statement in scope.body
    }
    bound: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(tree):
        targets = node.targets if type(node) is ast.Assign else [node.target] if type(node) in (ast.AugAssign, ast.AnnAssign) else ()
        for target in targets:
            if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id in _DERIVING:
                plain = type(node) is ast.Assign and len(node.targets) == 1 and id(node) in unconditional
                bound.setdefault(target.attr, []).append(node.value if plain else None)
    for name, values in bound.items():
        if name in options or len(values) != 1 or values[0] is None or not _reads_an_option(values[0], options):
            continue  # `args.multiprocessing_distributed = False` under a branch overrides a setting read elsewhere
        value = _evaluated(values[0], options)
        if value is not _UNKNOWN and value is not _AMBIGUOUS:
            yield name, value


def _reads_an_option(node: ast.expr, options: Mapping[str, object]) -> bool:
    return any(
        type(part) is ast.Attribute and type(part.value) is ast.Name and part.value.id in _DERIVING and part.attr in options
        for part in ast.walk(node)
    )


# The parsed namespace a script derives settings on (`args.x = ...`).
_DERIVING = frozenset({"args", "opt", "opts", "FLAGS", "flags"})


def _evaluated(node: ast.expr, options: Mapping[str, object]) -> object:
    kind = type(node)
    if kind is ast.Attribute and type(node.value) is ast.Name and node.value.id in _DERIVING:
        return options.get(node.attr, _UNKNOWN)
    if kind is ast.UnaryOp and type(node.op) is ast.Not:
        inner = _evaluated(node.operand, options)
        return _UNKNOWN if inner is _UNKNOWN or inner is _AMBIGUOUS else not inner
    if kind is ast.BoolOp:
        values = [_evaluated(value, options) for value in node.values]
        if any(value is _UNKNOWN or value is _AMBIGUOUS for value in values):
            return _UNKNOWN
        result = values[0]
        for value in values[1:]:
            result = (result and value) if type(node.op) is ast.And else (result or value)
        return result
    if kind is ast.Compare and len(node.ops) == 1 and type(node.ops[0]) in (ast.Eq, ast.NotEq):
        left, right = _evaluated(node.left, options), _evaluated(node.comparators[0], options)
        if any(value is _UNKNOWN or value is _AMBIGUOUS for value in (left, right)):
            return _UNKNOWN
        return (left == right) if type(node.ops[0]) is ast.Eq else (left != right)
    return literal(node)


# The fields of a statement that hold statements; a class is a statement, so its definition is
# found without walking a single expression (most of a tree's nodes).
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        for name in _STATEMENT_LISTS:
            children = getattr(node, name, None)
            if type(children) is list:
                pending.extend(reversed(children))


def _config_tree_defaults(tree: ast.AST) -> Iterator[tuple[str, object]]:
    """`_C.TRAIN.ENABLE = True` under `_C = CfgNode()`: the default of `TRAIN.ENABLE`."""
    roots: set[str] = set()
    for node in getattr(tree, "body", ()):
        if type(node) is not ast.Assign or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if type(target) is ast.Name and type(value) is ast.Call and _called_name(value) in _CONFIG_TREES:
            roots.add(target.id)
        elif type(target) is ast.Attribute and roots:
            path = ast.unparse(target).split(".")
            if path[0] in roots and len(path) > 1:
                default = literal(value)
                if default is not _UNKNOWN:
                    yield ".".join(path[1:]), default


def _called_name(call: ast.Call) -> str:
    return ast.unparse(call.func).rsplit(".", 1)[-1]


def _ast_option(call: ast.Call) -> Iterator[tuple[str, object]]:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    dest = literal(keywords["dest"]) if "dest" in keywords else next(
        (text[2:].replace("-", "_") for arg in call.args
         if isinstance(text := literal(arg), str) and text.startswith("--")), None,
    )
    if not isinstance(dest, str):
        return
    action = literal(keywords["action"]) if "action" in keywords else None
    if action in ("store_true", "store_false"):
        yield dest, action == "store_false"
    elif "action" not in keywords:
        if "required" in keywords and literal(keywords["required"]) is not False:
            return  # every run passes it: its value is the command's, not the parser's
        value = literal(keywords["default"]) if "default" in keywords else None
        kind = keywords.get("type")
        if isinstance(value, str) and type(kind) is ast.Name and kind.id in ("int", "float"):
            try:
                value = float(value) if kind.id == "float" else int(value)
            except ValueError:
                return
        if value is not _UNKNOWN:
            yield dest, value


def _ast_is_config_class(node: ast.ClassDef) -> bool:
    names = [ast.unparse(d.func if type(d) is ast.Call else d) for d in node.decorator_list]
    if any(name.endswith("dataclass") for name in names):
        return True
    return any(ast.unparse(base).endswith(("Config", "Arguments", "Args")) for base in node.bases)


def _ast_field_default(value: ast.expr) -> object:
    if type(value) is ast.Call and ast.unparse(value.func).rsplit(".", 1)[-1] == "field":
        default = next((k.value for k in value.keywords if k.arg == "default"), None)
        return literal(default) if default is not None else _UNKNOWN
    return literal(value)


# `NAME = literal` at the top of a module (a candidate module constant; checked with the parser).
_TOP_LEVEL_LITERAL = re.compile(
    r"""^([A-Za-z_]\w*)[ \t]*=[ \t]*(?:True|False|None|-?[\d.]+(?:e-?\d+)?|'[^'\n]*'|"[^"\n]*")[ \t]*(?:#.*)?$""", re.M
)


# Calls through which a module's globals can be set by name.
_REBINDS_GLOBALS = frozenset({"exec", "globals", "vars"})


def may_hold_constants(text: str) -> bool:
    """A quick look: does some top-level line bind a name to a literal?"""
    return _TOP_LEVEL_LITERAL.search(text) is not None


def module_constants(text: str) -> dict[str, object]:
    """Names bound at the module's top level to a literal and nowhere else in the module (no
    other assignment, parameter, loop target, import, `global`, definition or pattern of that
    name in any scope), so every read of them in the module reads that literal. None in a module
    that calls `exec`, `globals()` or `vars()`, through which any global may be set."""
    candidates = {match.group(1) for match in _TOP_LEVEL_LITERAL.finditer(text)}
    if not candidates:
        return {}
    tree = parsed(text)
    if tree is None:
        return {}
    bindings: dict[str, int] = {}
    for node in ast.walk(tree):
        if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in _REBINDS_GLOBALS:
            # nanoGPT's `exec(open('configurator.py').read())` overrides the globals from the
            # command line; `globals()[k] = v` does the same: no name holds its literal then.
            return {}
        for name in _names_bound_by(node):
            if name in candidates:
                bindings[name] = bindings.get(name, 0) + 1
    found: dict[str, object] = {}
    for statement in tree.body:
        if type(statement) is ast.Assign and len(statement.targets) == 1 and type(statement.targets[0]) is ast.Name:
            name = statement.targets[0].id
            value = literal(statement.value)
            if bindings.get(name) == 1 and value is not _UNKNOWN:
                found[name] = value
    return found


def _names_bound_by(node: ast.AST) -> Iterator[str]:
    kind = type(node)
    if kind is ast.Name and type(node.ctx) is not ast.Load:
        yield node.id
    elif kind is ast.arg:
        yield node.arg
    elif kind in (ast.Global, ast.Nonlocal):
        yield from node.names
    elif kind is ast.alias:
        yield (node.asname or node.name).split(".", 1)[0]
    elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        yield node.name
    elif kind is ast.ExceptHandler and node.name:
        yield node.name
    elif kind in (ast.MatchAs, ast.MatchStar) and node.name:
        yield node.name
    elif kind is ast.MatchMapping and node.rest:
        yield node.rest


def _literal(node: cst.BaseExpression) -> object:
    if type(node) in (cst.SimpleString, cst.Integer, cst.Float) or (
        type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) in (cst.Integer, cst.Float)
    ):
        try:
            return ast.literal_eval(code_of(node))
        except (ValueError, SyntaxError):
            return _UNKNOWN
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    return _UNKNOWN


def _literal_members(node: cst.BaseExpression) -> object:
    """The members of a literal list, tuple or set of literals, else _UNKNOWN."""
    if type(node) not in (cst.List, cst.Tuple, cst.Set):
        return _UNKNOWN
    members = []
    for element in node.elements:
        value = _literal(element.value) if type(element) is cst.Element else _UNKNOWN
        if value is _UNKNOWN:
            return _UNKNOWN
        members.append(value)
    return members


# An option that names the training mode of a script (`--do_train`, `--train`).
_TRAINING_MODE = re.compile(r"^(do_|run_)?train(ing)?$")


def _namespaces_through_calls(tree: ast.Module) -> set[str]:
    """`def parse_args(): ...; return parser.parse_args()`, then `main(parse_args())` or `opt =
    parse_args()`: the names that hold the parsed options though no `x = parser.parse_args()`
    names them (the parameter of `main` at that position, `opt`)."""
    functions = {node.name: node for node in ast.walk(tree) if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef)}
    parsers = {
        name for name, node in functions.items()
        if any(
            type(child) is ast.Return and type(child.value) is ast.Call and type(child.value.func) is ast.Attribute
            and child.value.func.attr == "parse_args"
            for child in ast.walk(node)
        )
    }
    if not parsers:
        return set()

    def parses(value: ast.AST | None) -> bool:
        return type(value) is ast.Call and type(value.func) is ast.Name and value.func.id in parsers

    found: set[str] = set()
    for node in ast.walk(tree):
        if type(node) is ast.Assign and parses(node.value):
            found.update(target.id for target in node.targets if type(target) is ast.Name)
        elif type(node) is ast.Call and type(node.func) is ast.Name and node.func.id in functions:
            params = functions[node.func.id].args
            ordered = [*params.posonlyargs, *params.args]
            for index, arg in enumerate(node.args):
                if parses(arg) and index < len(ordered):
                    found.add(ordered[index].arg)
            for keyword in node.keywords:
                if parses(keyword.value) and keyword.arg is not None:
                    found.add(keyword.arg)
    return found


def _option_value(name: str, defaults: Mapping[str, object], namespaces: set[str] | _ConfigurationObjects) -> object:
    """`args.lr`, `cfg.SOLVER.BASE_LR` (a yacs path), `config.general.ignore_sanity_checks` (a
    field of a section): the default of the path below the configuration object, else of the
    field it ends in."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in namespaces:
            path = ".".join(parts[cut:])
            return defaults.get(path, defaults.get(parts[-1], _UNKNOWN))
    return _UNKNOWN


def _value(node: cst.BaseExpression, line: CommandLine, owner: str | None = None) -> object:
    kind = type(node)
    if kind is cst.Name and node.value not in ("True", "False", "None"):
        return line.constant(node.value)
    if kind is cst.Attribute:
        name = dotted_name(node) or ""
        if owner and name.startswith("self.") and name.count(".") == 1:
            switch = line.switches.get(f"{owner}({name[5:]})", _UNKNOWN)
            if switch is not _UNKNOWN:
                return switch
        return _option_value(line.copies.get(name, name), line.defaults, line.namespaces)
    if kind is cst.UnaryOperation and type(node.operator) is cst.Not:
        inner = _value(node.expression, line, owner)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if kind is cst.BooleanOperation:
        left, right = _value(node.left, line, owner), _value(node.right, line, owner)
        if type(node.operator) is cst.And:
            if (left is not _UNKNOWN and not left) or (right is not _UNKNOWN and not right):
                return False
            return _UNKNOWN if _UNKNOWN in (left, right) else right
        if (left is not _UNKNOWN and left) or (right is not _UNKNOWN and right):
            return True
        return _UNKNOWN if _UNKNOWN in (left, right) else right
    if kind is cst.Comparison and len(node.comparisons) == 1:
        target = node.comparisons[0]
        if type(target.operator) in (cst.In, cst.NotIn):
            # `args.dataset in ['CelebA', 'RaFD']`: membership in a literal list, tuple or set.
            left, members = _value(node.left, line, owner), _literal_members(target.comparator)
            if left is _UNKNOWN or members is _UNKNOWN:
                return _UNKNOWN
            return (left in members) is (type(target.operator) is cst.In)
        left, right = _value(node.left, line, owner), _value(target.comparator, line, owner)
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
