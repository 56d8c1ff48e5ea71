"""Switches a class's constructor leaves at their defaults: `ComputeLoss(model)` never passes `autobalance`.

`if self.autobalance:` reads an attribute that the constructor copies from a parameter with a
literal default (`def __init__(self, model, autobalance=False)`). When nothing in the project can
give that parameter another value (no call passes the keyword, or enough positional arguments,
or unpacks arguments into the class; nothing stores the attribute elsewhere, names it in a
string or hands the class around to be called later), the attribute holds its default in every
run the project's own code makes. The branch the default skips is then opt-in, exactly as under
an argparse option's default (`cli_defaults`): a finding there rests on a choice nobody made.

Nothing is run, and little is parsed. The switches a source defines (`switches_in`) come from
each constructor alone: a regex finds the `def __init__` of an undecorated class, and only that
function is parsed with Python's own parser. What a source does that could set one is read off
its text, erring towards a use: how it calls or hands on the switches' classes (`class_uses`),
and whether it gives their names as keywords, in quotes or to an attribute store (`name_uses`),
both only for sources that name them. `project_switches` puts them together over the project and
returns a record a results cache keeps, so the next run reads again only the changed sources.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from verifier.static.python_literals import UNKNOWN, literal, parsed

# A source that may define a switch: a constructor, and a branch on an attribute of `self`.
_BRANCH_LINE = re.compile(r"\b(?:if|elif|while)\b[^\n]*?\bself\.[^\n]*")
_SELF_ATTRIBUTE = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)")
# `self.flag = ...`, `self.a, self.flag = ...`, or `flag=flag` forwarded to a base's constructor.
_SELF_STORED = re.compile(r"\bself\.([A-Za-z_][A-Za-z0-9_]*)\s*(?:,|=(?!=))|\b([A-Za-z_][A-Za-z0-9_]*)=\2\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `def __init__(self, model, autobalance=False)`: a constructor parameter with a literal default.
_INIT_SIGNATURE = re.compile(r"def __init__\(\s*self\b(.*?)\)\s*(?:->[^:\n]*)?:", re.DOTALL)
_LITERAL_DEFAULT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=,]*)?=\s*(?:True|False|None|-?[0-9.]|[\'\"])")
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_NAME_CHARACTERS = _WORD_CHARACTERS | {"."}
_INIT_LINE = re.compile(r"^([ \t]+)def __init__\(", re.MULTILINE)
_CLASS_LINE = re.compile(r"([ \t]*)class\s+([A-Za-z_][A-Za-z0-9_]*)\b")
_CODE_LINE = re.compile(r"^([ \t]*)(?=[^\s#)\]}])", re.MULTILINE)
_FACTORY_CALL = re.compile(r"(?<![\w.])cls\s*\(|__class__\s*\(|type\(\s*self\s*\)\s*\(")
_IMPORTS = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import\b.*", re.MULTILINE)
_ALIAS = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")
_CLASS_START = re.compile(r"\s*class\b")
_CLASS_KEYWORD = re.compile(r"\s*class\s+")
_OPENS_CALL = re.compile(r"\s*\(")
# A package's export list, `__all__ = [...]` (or `+=`, or a tuple), written out in literals.
_EXPORT_LIST = re.compile(r"^__all__[ \t]*\+?=[ \t]*[\[(][^\])]*[\])]", re.MULTILINE)
_IMPORT_LINE = re.compile(r"\s*(?:from\s|import\s)|.*\bimport\b")


@dataclass(frozen=True)
class Switch:
    """`self.<attribute>` of `owner` holds `default` unless the constructor's `parameter` (the
    `position`-th after `self`; None when keyword-only) is given."""

    owner: str
    attribute: str
    parameter: str
    position: int | None
    default: bool | int | float | str | None

    @property
    def name(self) -> str:
        """How the configuration defaults name it: `ComputeLoss(autobalance)`."""
        return f"{self.owner}({self.attribute})"

    @property
    def words(self) -> tuple[str, ...]:
        """The names a source must contain to have any say over this switch."""
        return tuple(dict.fromkeys((self.owner, self.parameter, self.attribute)))


@dataclass(frozen=True)
class ClassUses:
    """How one source uses the classes that define switches."""

    # (class, most positional arguments in one call, any `*`/`**` unpacking); a class making
    # instances of itself (`cls(...)`, `self.__class__(...)`) counts as unpacking.
    calls: tuple[tuple[str, int, bool], ...]
    # Classes named other than in a call, an import or their own `class` line: handed on to be
    # called later (`partial(Loss, ...)`, `factory=Loss`, `Loss.build(...)`) or subclassed.
    handed: tuple[str, ...]


@dataclass(frozen=True)
class NameUses:
    """What one source does with the switches' parameter and attribute names."""

    # Names given as keywords (an assignment to the name is taken for one).
    keywords: tuple[str, ...]
    # Names in quotes (`setattr(obj, "flag", True)`, `{"flag": True}`).
    strings: tuple[str, ...]
    # Attribute names stored (`x.flag = `, `x.flag += `, `del x.flag`).
    stores: tuple[str, ...]


@dataclass(frozen=True)
class SourceSwitches:
    """One source's part in the project's switches: what it defines and what it could set."""

    digest: str
    switches: tuple[Switch, ...]
    # `(class, alias)` for each import of a switch's class under another name.
    aliases: tuple[tuple[str, str], ...]
    classes: ClassUses | None
    names: NameUses | None


@dataclass(frozen=True)
class SwitchRecord:
    """The project's switches as a run found them, per source (by content), so that the next
    run over the same files reads again only what changed (a results cache keeps it)."""

    owners: tuple[str, ...]
    # The owners and their aliases, whose uses `SourceSwitches.classes` holds.
    classes: tuple[str, ...]
    names: tuple[str, ...]
    # Every source's digest, in order; `sources` holds only those with anything to say (most
    # sources define no switch and name none: their part is empty, and kept as the digest alone).
    digests: tuple[str, ...]
    sources: tuple[SourceSwitches, ...]
    kept: tuple[tuple[str, bool | int | float | str | None], ...]


def project_switches(texts: Sequence[str], previous: SwitchRecord | None = None) -> SwitchRecord:
    """The switches that hold over the project's sources; `previous` (the record of an earlier
    run over the same files) spares reading again the sources whose text it already saw.

    First the classes: a switch holds only if its class is constructed and never handed on, no
    call gives it enough positional arguments. Then, for the switches left, their names: no
    keyword, string or attribute store anywhere may set them."""
    digests = [hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() for text in texts]
    if previous is not None and list(previous.digests) == digests:
        return previous
    known: dict[str, SourceSwitches] = {}
    if previous is not None:
        known = {digest: SourceSwitches(digest, (), (), None, None) for digest in previous.digests}
        known.update((source.digest, source) for source in previous.sources)
    constructors: dict[int, list[_Constructor]] = {}
    defined: list[tuple[Switch, ...]] = []
    for index, (text, digest) in enumerate(zip(texts, digests)):
        if digest in known:
            defined.append(known[digest].switches)
        else:
            found = constructors[index] = _constructors_in(text) if may_define_switches(text) else []
            defined.append(tuple(switch for constructor in found for switch in constructor.switches))
    switches = [switch for found in defined for switch in found]
    owners = frozenset(switch.owner for switch in switches)
    identifiers: dict[int, frozenset[str]] = {}

    def named(index: int) -> frozenset[str]:
        if index not in identifiers:
            identifiers[index] = frozenset(_IDENTIFIER.findall(texts[index]))
        return identifiers[index]

    def blanked(index: int) -> tuple[str, list[_Constructor]]:
        if index not in constructors:
            constructors[index] = _constructors_in(texts[index]) if may_define_switches(texts[index]) else []
        return _without_copies(texts[index], constructors[index]), constructors[index]

    # `from .adamw8bit import AdamW8bit as GaLoreAdamW8bit`: the class is called by both names.
    same_owners = previous is not None and owners <= frozenset(previous.owners)
    imported: list[tuple[tuple[str, str], ...]] = []
    for index, digest in enumerate(digests):
        if digest in known and same_owners:
            imported.append(tuple(pair for pair in known[digest].aliases if pair[0] in owners))
        elif owners and " as " in texts[index] and not owners.isdisjoint(named(index)):
            lines = _IMPORTS.findall(texts[index])
            imported.append(tuple(pair for line in lines for pair in _ALIAS.findall(line) if pair[0] in owners))
        else:
            imported.append(())
    aliases: dict[str, str] = {}
    for owner, alias in (pair for pairs in imported for pair in pairs):
        aliases[alias] = owner if aliases.get(alias, owner) == owner else ""
    names_of_classes = owners | {alias for alias, owner in aliases.items() if owner}
    same_classes = previous is not None and names_of_classes <= frozenset(previous.classes)
    classes: list[ClassUses | None] = []
    for index, digest in enumerate(digests):
        if digest in known and same_classes:
            classes.append(_classes_within(known[digest].classes, names_of_classes))
        elif not names_of_classes.isdisjoint(named(index)):
            text, found = blanked(index)
            classes.append(class_uses(text, names_of_classes & named(index), {c.owner for c in found if c.factory}))
        else:
            classes.append(None)
    standing = _standing(switches, classes, {alias: owner for alias, owner in aliases.items() if owner})
    words = frozenset(word for switch in standing for word in (switch.parameter, switch.attribute))
    same_words = previous is not None and words <= frozenset(previous.names)
    names: list[NameUses | None] = []
    for index, digest in enumerate(digests):
        if digest in known and same_words:
            names.append(_names_within(known[digest].names, words))
        elif words and not words.isdisjoint(named(index)):
            names.append(name_uses(blanked(index)[0], words & named(index)))
        else:
            names.append(None)
    kept = kept_switches(standing, names)
    sources = tuple(
        source for source in map(SourceSwitches, digests, defined, imported, classes, names)
        if source.switches or source.aliases or source.classes is not None or source.names is not None
    )
    return SwitchRecord(
        tuple(sorted(owners)), tuple(sorted(names_of_classes)), tuple(sorted(words)), tuple(digests), sources, kept,
    )


def may_define_switches(text: str) -> bool:
    """False for most sources, without parsing: a switch needs a constructor parameter with a
    literal default, stored on `self` under a name a branch on `self` tests."""
    if "def __init__" not in text:
        return False
    tested = _tested(text)
    if not tested:
        return False
    defaults = {name for signature in _INIT_SIGNATURE.findall(text) for name in _LITERAL_DEFAULT.findall(signature)}
    return not tested.isdisjoint(defaults) and not tested.intersection(defaults).isdisjoint(
        a or b for a, b in _SELF_STORED.findall(text)
    )


def switches_in(text: str) -> tuple[Switch, ...]:
    """The switches a source's classes define: a constructor parameter with a literal default,
    copied to an attribute (`self.flag = flag`, or forwarded as `flag=flag` to the base's
    `__init__`) and never bound again there, whose attribute a branch on `self` tests."""
    return tuple(switch for constructor in _constructors_in(text) for switch in constructor.switches)


def class_uses(text: str, owners: Iterable[str], made_here: Iterable[str] = ()) -> ClassUses:
    """How a source uses the classes `owners` (which it names), read off its text and erring
    towards a use: any mention other than a call, an import or its own `class` line hands the
    class on. `made_here`: classes the source constructs through `cls(...)`, arguments unread."""
    calls: dict[str, tuple[int, bool]] = {owner: (0, True) for owner in made_here}
    handed: set[str] = set()
    # `__all__ = ["Trainer", ...]` exports the name to importers; nothing here is handed it.
    text = _EXPORT_LIST.sub(lambda match: " " * len(match.group()), text)
    for word in owners:
        for match in re.finditer(rf"{re.escape(word)}\b", text):
            if text[match.start() - 1:match.start()] in _WORD_CHARACTERS:
                continue  # part of a longer name
            before = text[text.rfind("\n", 0, match.start()) + 1:match.start()]
            if "#" in before or _IMPORT_LINE.match(before) or _CLASS_KEYWORD.fullmatch(before):
                continue  # a comment, an import, the class's own line
            if _CLASS_START.match(before) or not _OPENS_CALL.match(text, match.end()):
                handed.add(word)
                continue
            arguments = _call_arguments(text, text.index("(", match.end()))
            count, star = arguments if arguments is not None else (0, True)
            most, starred = calls.get(word, (0, False))
            calls[word] = (max(most, count), starred or star)
    return ClassUses(tuple(sorted((name, count, star) for name, (count, star) in calls.items())), tuple(sorted(handed)))


def name_uses(text: str, words: Iterable[str]) -> NameUses:
    """What a source does with the names `words` (which it contains), erring towards a use: an
    assignment to a name is taken for a keyword."""
    keywords, strings, stores = set(), set(), set()
    deletes = "del " in text
    for word in words:
        quoted = re.escape(word)
        for match in re.finditer(rf"{quoted}[ \t]*=", text):
            if text[match.start() - 1:match.start()] not in _NAME_CHARACTERS and text[match.end():match.end() + 1] != "=":
                keywords.add(word)
                break
        if f"'{word}'" in text or f'"{word}"' in text:
            strings.add(word)
        if re.search(rf"\.{quoted}[ \t]*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)", text) or (
            deletes and re.search(rf"\bdel\b[^\n]*\.{quoted}\b", text)
        ):
            stores.add(word)
    return NameUses(tuple(sorted(keywords)), tuple(sorted(strings)), tuple(sorted(stores)))


def kept_switches(standing: Iterable[Switch], names: Iterable[NameUses | None]) -> tuple[tuple[str, object], ...]:
    """`(switch name, default)` for each switch left standing by its class's uses that no
    keyword, string or attribute store in the project can set."""
    names = [use for use in names if use is not None]
    keywords = {k for use in names for k in use.keywords}
    strings = {s for use in names for s in use.strings}
    stores = {s for use in names for s in use.stores}
    return tuple(sorted(
        {(switch.name, switch.default) for switch in standing
         if switch.parameter not in keywords and not {switch.parameter, switch.attribute} & strings
         and switch.attribute not in stores}
    ))


def _standing(
    switches: list[Switch], classes: Iterable[ClassUses | None], aliases: dict[str, str] | None = None
) -> list[Switch]:
    """The switches whose class the project constructs, never hands on, never gives enough
    positional arguments to reach the switch, and whose definitions all agree. A class nobody
    here constructs is the user's to configure: nothing is known of its switches."""
    calls: dict[str, tuple[int, bool]] = {}
    handed: set[str] = set()
    aliases = aliases or {}
    for use in (use for use in classes if use is not None):
        handed.update(aliases.get(name, name) for name in use.handed)
        for name, count, star in use.calls:
            name = aliases.get(name, name)
            most, starred = calls.get(name, (0, False))
            calls[name] = (max(most, count), starred or star)
    defined: dict[str, list[Switch]] = {}
    for switch in switches:
        defined.setdefault(switch.name, []).append(switch)
    standing: list[Switch] = []
    for group in defined.values():
        if len({(type(s.default), s.default) for s in group}) != 1:
            continue
        owner = group[0].owner
        if owner in handed or owner not in calls or calls[owner][1]:
            continue
        if all(s.position is None or calls[owner][0] <= s.position for s in group):
            standing.extend(group)
    return standing


@dataclass
class _Constructor:
    """One class's `__init__` as a source spells it: where it is, what it copies, and whether
    the class also makes instances of itself (`cls(...)`)."""

    owner: str
    start: int
    end: int
    switches: tuple[Switch, ...]
    factory: bool


def _constructors_in(text: str) -> list[_Constructor]:
    """Each `def __init__` directly in an undecorated class, parsed on its own (a few lines, not
    the whole source); one that does not parse alone defines nothing."""
    tested = _tested(text)
    found: list[_Constructor] = []
    for match in _INIT_LINE.finditer(text):
        indent = match.group(1)
        owner = _owning_class(text, match.start(), indent)
        if owner is None:
            continue
        name, class_start, class_indent = owner
        end = _block_end(text, match.end(), indent)
        function = _parsed_function(text[match.start():end], indent)
        if function is None or not function.args.args:
            continue
        switches = tuple(
            Switch(name, attribute, parameter, position, default)
            for parameter, position, default in _literal_parameters(function.args)
            for attribute in _copies_of(function, parameter) if attribute in tested
        )
        body = text[class_start:_block_end(text, class_start + 1, class_indent)]
        factory = bool(_FACTORY_CALL.search(body))
        found.append(_Constructor(name, match.start(), end, switches, factory))
    return found


def _owning_class(text: str, position: int, indent: str) -> tuple[str, int, str] | None:
    """The undecorated class whose body the `def` at `position` (indented by `indent`) is
    directly in: the first code line above it indented less must be that class's line."""
    for line_start, line in _lines_before(text, position):
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("#", ")", "]", "}")):
            continue
        if len(line) - len(stripped) >= len(indent):
            continue
        match = _CLASS_LINE.match(line)
        return _checked_class(text, line_start, match) if match is not None else None
    return None


def _checked_class(text: str, line_start: int, match: re.Match) -> tuple[str, int, str] | None:
    previous = text.rfind("\n", 0, max(line_start - 1, 0))
    if text[previous + 1:line_start].lstrip().startswith("@"):
        return None  # a decorated class may be built from a registry's configuration
    return match.group(2), line_start, match.group(1)


def _lines_before(text: str, position: int) -> Iterator[tuple[int, str]]:
    end = text.rfind("\n", 0, position)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        yield start, text[start:end]
        end = start - 1


def _block_end(text: str, position: int, indent: str) -> int:
    """Where the block whose header line holds `position` ends: the next code line indented no
    deeper than `indent`."""
    newline = text.find("\n", position)
    for line in _CODE_LINE.finditer(text, newline + 1 if newline >= 0 else len(text)):
        if len(line.group(1)) <= len(indent):
            return line.start()
    return len(text)


def _parsed_function(source: str, indent: str) -> ast.FunctionDef | None:
    lines = source.splitlines()
    if any(line.strip() and not line.startswith(indent) for line in lines):
        return None
    tree = parsed("\n".join(line[len(indent):] for line in lines))
    if tree is None or len(tree.body) != 1 or type(tree.body[0]) is not ast.FunctionDef:
        return None
    return tree.body[0]


def _without_copies(text: str, constructors: list[_Constructor]) -> str:
    """The text with each constructor blanked (lines kept): its signature's defaults and its
    copies are the switch's definition, not a use."""
    for constructor in reversed(constructors):
        span = text[constructor.start:constructor.end]
        text = text[:constructor.start] + re.sub(r"[^\n]", " ", span) + text[constructor.end:]
    return text


def _tested(text: str) -> set[str]:
    return {name for line in _BRANCH_LINE.findall(text) for name in _SELF_ATTRIBUTE.findall(line)}


def _classes_within(uses: ClassUses | None, owners: frozenset[str]) -> ClassUses | None:
    if uses is None:
        return None
    return ClassUses(tuple(c for c in uses.calls if c[0] in owners), tuple(h for h in uses.handed if h in owners))


def _names_within(uses: NameUses | None, words: frozenset[str]) -> NameUses | None:
    if uses is None:
        return None
    return NameUses(*(tuple(w for w in found if w in words) for found in (uses.keywords, uses.strings, uses.stores)))


def _call_arguments(text: str, opening: int) -> tuple[int, bool] | None:
    """(positional arguments, any `*`/`**`) of the call whose `(` is at `opening`; None when the
    text cannot be read as one (a quote or bracket left open)."""
    depth, position, count, star, start = 0, opening, 0, False, opening + 1
    pieces: list[str] = []
    while position < len(text):
        char = text[position]
        if char in "\'\"":
            end = text.find(char, position + 1)
            if end < 0:
                return None
            position = end
        elif char == "#":
            position = text.find("\n", position)
            if position < 0:
                return None
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                pieces.append(text[start:position])
                break
        elif char == "," and depth == 1:
            pieces.append(text[start:position])
            start = position + 1
        position += 1
    else:
        return None
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if piece.startswith("*"):
            star = True
        elif not re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*=(?!=)", piece):
            count += 1
    return count, star


def _literal_parameters(arguments: ast.arguments) -> Iterator[tuple[str, int | None, object]]:
    positional = [*arguments.posonlyargs, *arguments.args][1:]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    for index, (parameter, default) in enumerate(zip(positional, defaults)):
        if default is not None and (value := literal(default)) is not UNKNOWN:
            yield parameter.arg, index, value
    for parameter, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if default is not None and (value := literal(default)) is not UNKNOWN:
            yield parameter.arg, None, value


def _copies_of(init: ast.FunctionDef, parameter: str) -> list[str]:
    """The attributes `init` copies `parameter` to, or none when it binds the parameter again."""
    copied: list[str] = []
    self_name = init.args.args[0].arg
    for node in _own_nodes(init):
        kind = type(node)
        if kind is ast.Name and node.id == parameter and type(node.ctx) is not ast.Load:
            return []
        if kind is ast.Assign:
            for target in node.targets:
                for part, value in _pairs(target, node.value):
                    if _is_attribute_of(part, self_name) and type(value) is ast.Name and value.id == parameter:
                        copied.append(part.attr)
        elif kind is ast.AnnAssign and node.value is not None and _is_attribute_of(node.target, self_name):
            if type(node.value) is ast.Name and node.value.id == parameter:
                copied.append(node.target.attr)
        elif kind is ast.Call and _is_base_init(node.func):
            copied += [k.arg for k in node.keywords if k.arg == parameter and type(k.value) is ast.Name and k.value.id == parameter]
    return copied


def _pairs(target: ast.expr, value: ast.expr) -> Iterator[tuple[ast.expr, ast.expr]]:
    """`a, b = x, y`: (a, x), (b, y); `a = x`: (a, x)."""
    if type(target) in (ast.Tuple, ast.List) and type(value) in (ast.Tuple, ast.List) and len(target.elts) == len(value.elts):
        for part, element in zip(target.elts, value.elts):
            yield from _pairs(part, element)
    else:
        yield target, value


def _is_attribute_of(node: ast.AST, name: str) -> bool:
    return type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == name


def _is_base_init(func: ast.expr) -> bool:
    """`super().__init__`, `super(Cls, self).__init__` or `Base.__init__`."""
    if type(func) is not ast.Attribute or func.attr != "__init__":
        return False
    owner = func.value
    return (type(owner) is ast.Call and type(owner.func) is ast.Name and owner.func.id == "super") or type(owner) in (
        ast.Name, ast.Attribute,
    )


def _own_nodes(function: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of `function`'s body, not those of functions, lambdas or classes inside it."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if type(node) not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))


