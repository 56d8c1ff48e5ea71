"""Names as the code means them: the module's imports, dotted spellings and call arguments.

Rules compare qualified names (`torch.cuda.synchronize`), never the spelling of a call, so
`import torch as t; t.cuda.synchronize()` and `from torch.cuda import synchronize` match the
same rule. A light import table is enough for that and far cheaper than full scope analysis.

Node types are tested with `type(node) is cst.Name` throughout: libcst's concrete node
classes have no subclasses, and `isinstance()` against them goes through ABCMeta, which
costs more than a whole rule's logic on a hot path.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.walk import iter_descendants

# Objects that hold a run's configuration (`args.lr`, `cfg.amp`, `self.cfg.amp`): a test or a
# device read through them is a setting, not a value the step computes.
CONFIG_ROOTS = frozenset(
    {"args", "opt", "opts", "cfg", "config", "conf", "flags", "hparams", "hp", "options", "settings", "training_args"}
)


# Prints a node's code without the module it came from (a test shown in a trace, a read's code).
_BARE_MODULE = cst.Module(body=())


def code_of(node: cst.CSTNode) -> str:
    """The source text of `node` alone, as the parser read it."""
    return _BARE_MODULE.code_for_node(node)


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None (calls and subscripts break the chain)."""
    kind = type(node)
    if kind is cst.Name:
        return node.value
    if kind is not cst.Attribute:
        return None
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def keyed_name(node: cst.CSTNode) -> str | None:
    """`out["loss"]`: a string-keyed item of a named container, as one name (`out['loss']`), so
    a value put in a dict literal is found again by its key; None for anything else."""
    if type(node) is not cst.Subscript or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    owner = dotted_name(node.value)
    key = literal_string(node.slice[0].slice.value)
    return f"{owner}[{key!r}]" if owner is not None and key is not None else None


def dict_items(value: cst.BaseExpression | None) -> list[tuple[str, cst.BaseExpression]] | None:
    """`{"loss": l, "acc": a}`: its string-keyed items; None for anything that is not a dict literal."""
    if type(value) is not cst.Dict:
        return None
    items = []
    for element in value.elements:
        key = literal_string(element.key) if type(element) is cst.DictElement else None
        if key is not None:
            items.append((key, element.value))
    return items


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted_name(node)
    return name or ""


# Libraries whose functions the rules name, and which an alias may stand for (`run = subprocess.run`).
_ALIASED_LIBRARIES = ("torch.", "subprocess.", "os.")


class ImportTable:
    """Maps local names bound by import statements to the qualified names they stand for."""

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        # Several walkers ask for the same node's name: id -> (node, aliases seen, answer).
        # Holding the node keeps its id from being reused while the table lives.
        self._answers: dict[int, tuple[cst.CSTNode, int, str | None]] = {}
        self._version = 0
        # Names bound to a method of a call's result (`sync = torch.cuda.Event().synchronize`).
        self._bound_methods: dict[str, cst.Attribute] = {}
        # This module's classes derived from a library class: name -> the library class.
        self._derived: dict[str, str] = {}

    def forget_nodes(self) -> None:
        """Drop the remembered answers (and the nodes they hold) once the walk is over."""
        self._answers = {}
        self._bound_methods = {}

    def add(self, statement: cst.Import | cst.ImportFrom, fallback: bool = False) -> None:
        """`fallback`: the import sits in an `except` handler; a name its `try` already bound keeps
        that binding (the one the code runs with where the newer import works)."""
        self._version += 1
        if type(statement) is cst.Import:
            for alias in statement.names:
                full = _module_name(alias.name)
                if alias.asname is not None:
                    self._bind(dotted_name(alias.asname.name) or full, full, fallback)
                else:
                    # `import torch.nn` binds `torch`; later `torch.nn.X` resolves through it.
                    head = full.split(".", 1)[0]
                    self._bind(head, head, fallback)
            return
        base = "." * len(statement.relative) + (_module_name(statement.module) if statement.module else "")
        if type(statement.names) is cst.ImportStar:
            return
        for alias in statement.names:
            name = _module_name(alias.name)
            local = dotted_name(alias.asname.name) if alias.asname is not None else name
            if local:
                self._bind(local, base + name if base.endswith(".") else f"{base}.{name}", fallback)

    def _bind(self, local: str, qualified: str, fallback: bool) -> None:
        if not (fallback and local in self._aliases):
            self._aliases[local] = qualified

    def shadow(self, name: str) -> None:
        """`from math import log` then `def log(t): ...` at the module's top: the module's own
        function is what `log` names from then on (for the functions that call it, too)."""
        if name in self._aliases or name in self._bound_methods:
            self._version += 1
            self._aliases.pop(name, None)
            self._bound_methods.pop(name, None)

    def add_alias(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`sync = torch.cuda.synchronize` or `sync = torch.cuda.synchronize if cuda else
        lambda: None`: the name calls the torch function (on the branch where it matters)."""
        if type(target) is not cst.Name:
            return
        options = [value.body, value.orelse] if type(value) is cst.IfExp else [value]
        for option in options:
            if type(option) is cst.Attribute and type(option.value) is cst.Call:
                # `sync = torch.cuda.Event().synchronize`: a bound method; `sync()` calls it.
                self._bound_methods[target.value] = option
                return
            if type(option) in (cst.Name, cst.Attribute):
                qualified = self.qualified_name(option)
                if qualified is not None and qualified.startswith(_ALIASED_LIBRARIES):
                    self._version += 1
                    self._aliases[target.value] = qualified
                    return

    def bound_method(self, call: cst.Call) -> cst.Attribute | None:
        """`Event().synchronize` for `sync()` after `sync = torch.cuda.Event().synchronize`."""
        func = call.func
        return self._bound_methods.get(func.value) if type(func) is cst.Name else None

    def imported_names(self) -> dict[str, str]:
        """Each local name an import binds, with what it stands for (relative names as written)."""
        return dict(self._aliases)

    def qualify(self, dotted: str) -> str | None:
        """The qualified name of a dotted spelling, or None when its head was not imported."""
        head, _, rest = dotted.partition(".")
        target = self._aliases.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        known = self._answers.get(id(node))
        if known is not None and known[0] is node and known[1] == self._version:
            return known[2]
        dotted = dotted_name(node)
        answer = self.qualify(dotted) if dotted else None
        self._answers[id(node)] = (node, self._version, answer)
        return answer

    def note_class(self, node: cst.ClassDef) -> None:
        """`class CustomDataParallel(nn.DataParallel):` is a kind of `torch.nn.DataParallel`
        (directly, or through another class of this module); the first such base counts."""
        for base in node.bases:
            if base.keyword is not None or base.star:
                continue
            name = dotted_name(base.value)
            library = self._derived.get(name) if name is not None else None
            qualified = library or self.qualified_name(base.value)
            if qualified is not None and not qualified.startswith("."):
                self._derived[node.name.value] = qualified
                return

    def library_base(self, node: cst.BaseExpression) -> str | None:
        """The library class a class of this module named by `node` derives from, else None."""
        name = dotted_name(node)
        return self._derived.get(name) if name is not None else None

    def call_name(self, call: cst.Call) -> str | None:
        """Qualified name of the called function, e.g. `torch.stack` for `t.stack(...)`."""
        return self.qualified_name(call.func)

    def imports_module(self, prefix: str) -> bool:
        return any(t == prefix or t.startswith(prefix + ".") for t in self._aliases.values())


def method_name(call: cst.Call) -> str | None:
    """`item` for `x.item()`; None when the call is not a method call."""
    func = call.func
    return func.attr.value if type(func) is cst.Attribute else None


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    """`x` in `x.item()`."""
    func = call.func
    return func.value if type(func) is cst.Attribute else None


def terminal_name(node: cst.CSTNode) -> str | None:
    """The last identifier of a reference: `optimizer` for `self.optimizer`, `opt` for `opt`."""
    kind = type(node)
    if kind is cst.Name:
        return node.value
    if kind is cst.Attribute:
        return node.attr.value
    return None


def root_name(node: cst.CSTNode) -> str | None:
    """The first identifier of an expression: `loss` for `loss.detach().item()`."""
    while True:
        if type(node) is cst.Name:
            return node.value
        if type(node) is cst.Attribute:
            node = node.value
        elif type(node) is cst.Call:
            node = node.func
        elif type(node) is cst.Subscript:
            node = node.value
        else:
            return None


def keyword_arg(call: cst.Call, keyword: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    return None


def positional_arg(call: cst.Call, index: int) -> cst.Arg | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index] if index < len(positional) else None


# Wrappers that yield their first argument's elements unchanged (a progress bar's `__enter__`
# returns the bar): `tqdm(enumerate(loader, 1))` iterates the loader's batches.
PASSING_THROUGH = frozenset({"tqdm", "track", "iter", "islice", "enumerate"})


def iterated_source(node: cst.BaseExpression) -> cst.BaseExpression:
    """What iterating `node` really iterates, through the wrappers that pass elements on."""
    while type(node) is cst.Call and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in PASSING_THROUGH:
        first = positional_arg(node, 0)
        if first is None:
            break
        node = first.value
    return node


def names_in(node: cst.CSTNode) -> set[str]:
    """The dotted names (`x`, `self.buf`) read anywhere in `node`, itself included."""
    found = {dotted_name(n) for n in (node, *iter_descendants(node)) if type(n) in (cst.Name, cst.Attribute)}
    found.discard(None)
    return found


def has_star_args(call: cst.Call) -> bool:
    """`f(*a)` / `f(**kw)`: an argument we cannot see statically; rules stay silent then."""
    return any(a.star for a in call.args)


def is_true(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value == "True"


def is_false(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value == "False"


def local_callee_name(func: cst.BaseExpression) -> str | None:
    """`helper` for `helper(...)` and `self.helper(...)`: the calls that can reach a function of the same module."""
    if type(func) is cst.Name:
        return func.value
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
        return func.attr.value
    return None


def literal_string(node: cst.CSTNode | None) -> str | None:
    """The value of a plain string literal (`"cuda:0"`); None for anything else or an odd literal."""
    if type(node) is not cst.SimpleString:
        return None
    text = node.value
    if text[0] in "'\"" and "\\" not in text and "\r" not in text and "\0" not in text:
        # No prefix and nothing to unescape: the value is the text between the quotes
        # (libcst's `evaluated_value` compiles every literal, a cost paid for each one seen).
        quotes = 3 if len(text) >= 6 and text[:3] in ('"""', "'''") else 1
        return text[quotes:-quotes]
    try:
        value = node.evaluated_value
    except Exception:  # a literal libcst cannot evaluate is simply unknown
        return None
    return value if isinstance(value, str) else None


# Cross-process helpers that hand back what they were given, element by element
# (`preds, refs = accelerator.gather_for_metrics((preds, batch["labels"]))`).
_RETURNS_ITS_STRUCTURE = frozenset({"gather", "gather_for_metrics", "reduce", "pad_across_processes", "send_to_device"})


def element_pairs(target: cst.BaseExpression, value: cst.BaseExpression | None) -> list[tuple[cst.BaseExpression, cst.BaseExpression]] | None:
    """`a, b = x, y`: the (target, value) pairs of an unpacking element by element, when both
    sides are literal tuples or lists of one length without a starred element (also through a
    helper that returns its one argument's structure); else None."""
    if type(value) is cst.Call and method_name(value) in _RETURNS_ITS_STRUCTURE:
        positional = [arg for arg in value.args if arg.keyword is None]
        if len(positional) == 1 and not positional[0].star:
            value = positional[0].value
    if type(target) not in (cst.Tuple, cst.List) or type(value) not in (cst.Tuple, cst.List):
        return None
    elements, values = target.elements, value.elements
    if len(values) != len(elements) or any(type(e) is cst.StarredElement for e in (*elements, *values)):
        return None
    return [(element.value, item.value) for element, item in zip(elements, values)]


def listed_values(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a tuple or list literal holds (`torch.cat((a, b))`'s `a` and `b`), else the node."""
    if type(node) in (cst.Tuple, cst.List):
        return [element.value for element in node.elements if type(element) is cst.Element]
    return [node]
