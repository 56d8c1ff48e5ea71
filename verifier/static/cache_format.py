"""The results cache's file format: JSON that can only describe data, checked on every read.

A cache folder may come from anywhere (a committed directory, a restored CI cache), so reading
an entry must never run code and never hand the run something it does not expect. An entry is
`<HMAC-SHA256 of its name and body>\\n<body>`, signed with a key kept outside every project
(`cache_key`): an entry made anywhere else, or edited and signed again without the key, is
`Invalid` before its body is parsed, and the name in the MAC stops an entry being moved to
another key. The body is a graph of the analysis' own result objects (a file's findings and its
heat summary, whose shape changes as the heat model grows): a list of objects, each its class's
name and its fields, and the root value. A dataclass's fields are a list in declared order, each
value in the form its annotation calls for (an object of the annotated class is its index, an
enum member its name, a typed list, tuple or set a plain list, a typed dict its keys and its
values); anything else, and every attribute of another class, is encoded generically: plain JSON
values, tagged tuples, sets, dicts and enum members, and objects by reference.

Decoding only accepts classes defined in the analyser's own, already imported modules, creates
them without calling any constructor, sets exactly the fields their class declares, and checks
every value against the field's annotation. Each dataclass gets a decoder per field, built once
from the annotation, that decodes and checks a value in one step; a value not in its annotation's
form is decoded generically and then checked, as every value once was. Anything else is
`Invalid`, which the cache treats as a miss.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import hashlib
import hmac
import itertools
import json
import math
import sys
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

FORMAT = 4
# Modules whose classes may appear in an entry; nothing is ever imported because of an entry.
_TRUSTED_MODULES = ("verifier.findings", "verifier.static.")
_MAX_OBJECTS = 5_000_000
# The JSON values that decode to themselves.
_PLAIN_KINDS = frozenset({type(None), bool, int, float, str})


class Invalid(Exception):
    """The bytes are not an entry this build wrote (corrupt, foreign or crafted)."""


class Unencodable(Exception):
    """The value holds something that is not data (a syntax tree, a function, a foreign object)."""


def dumps(value: Any, key: bytes, name: str) -> bytes:
    """The entry stored as `name`, signed with `key`."""
    body = json.dumps(_EntryEncoder().document(value), separators=(",", ":"), allow_nan=False).encode()
    return signature(key, name, body) + b"\n" + body


def loads(data: bytes, expected: type, key: bytes, name: str) -> Any:
    """The value `dumps` stored as `name` with `key`, which must be an instance of `expected`; else Invalid."""
    mac, newline, body = data.partition(b"\n")
    if not newline or not hmac.compare_digest(signature(key, name, body), mac):
        raise Invalid("not signed with this user's cache key")
    try:
        document = json.loads(body)
        value = _Decoder(document).value()
    except Invalid:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, IndexError) as error:
        raise Invalid(f"{type(error).__name__}: {error}") from None
    if type(value) is not expected:
        raise Invalid(f"expected {expected.__name__}, found {type(value).__name__}")
    return value


def canonical(value: Any, apart: str = "") -> tuple[bytes, list[Any]]:
    """The value as this format describes it, with every set in one order: equal bytes for equal
    data whichever process built it (a set's order follows string hashing, which differs between
    processes). With `apart`, every object's field of that name is written as 0 and its values
    are returned in the order written (two values equal but for those fields give equal bytes,
    and their fields pair up in order). Unencodable when the value is not data."""
    encoder = _CanonicalEncoder(apart)
    document = encoder.document(value)
    return json.dumps(document, separators=(",", ":"), allow_nan=False).encode(), encoder.set_apart


def signature(key: bytes, name: str, body: bytes) -> bytes:
    mac = hmac.new(key, name.encode() + b"\0", hashlib.sha256)
    mac.update(body)
    return mac.hexdigest().encode()


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _trusted(module: str) -> bool:
    return any(module == prefix or (prefix.endswith(".") and module.startswith(prefix)) for prefix in _TRUSTED_MODULES)


class _Encoder:
    """The generic encoding: every object's attributes by name, every value tagged by its kind
    (what `canonical` compares, and what an entry holds where no annotation applies)."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.objects: list[Any] = []
        self.encoded: list[list] = []

    def document(self, root: Any) -> dict:
        encoded_root = self.encode(root)
        # Objects are encoded from a work list, so a long chain of references never recurses.
        position = 0
        while position < len(self.objects):
            self.encoded.append(self.fields_of(self.objects[position]))
            position += 1
        return {"format": FORMAT, "objects": self.encoded, "root": encoded_root}

    def fields_of(self, obj: Any) -> list:
        cls = type(obj)
        if dataclasses.is_dataclass(cls):
            names = [f.name for f in dataclasses.fields(cls)]
        else:
            names = sorted(vars(obj))
        return [_class_name(cls), {name: self.encode(getattr(obj, name)) for name in names}]

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if kind is list:
            return [self.encode(item) for item in value]
        if kind is tuple:
            return {"tuple": [self.encode(item) for item in value]}
        if kind in (set, frozenset):
            return {kind.__name__: [self.encode(item) for item in value]}
        if kind is dict:
            return {"dict": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if isinstance(value, enum.Enum) and _trusted(kind.__module__):
            return {"enum": _class_name(kind), "name": value.name}
        if self.by_reference(value):
            return {"ref": self.index(value)}
        raise Unencodable(f"{kind.__module__}.{kind.__qualname__} is not data")

    @staticmethod
    def by_reference(value: Any) -> bool:
        """Whether the value is an object of the analyser's own that is stored once and referred to."""
        kind = type(value)
        return (
            _trusted(kind.__module__) and not issubclass(kind, enum.Enum)
            and hasattr(value, "__dict__") and not callable(value)
        )

    def index(self, obj: Any) -> int:
        """The object's place in the entry's list of objects, given on first sight."""
        index = self.ids.get(id(obj))
        if index is None:
            index = self.ids[id(obj)] = len(self.objects)
            self.objects.append(obj)
        return index


class _EntryEncoder(_Encoder):
    """What `dumps` writes: a dataclass's fields as a list in declared order, each value in the
    form its annotation calls for (which needs no tags and decodes without looking at them)."""

    def fields_of(self, obj: Any) -> list:
        layout = _layout(type(obj))
        if layout is None:
            return super().fields_of(obj)
        return [_class_name(type(obj)), [codec.encode(getattr(obj, name), self) for name, codec in layout.fields]]


class _CanonicalEncoder(_Encoder):
    def __init__(self, apart: str = "") -> None:
        super().__init__()
        self.apart = apart
        self.set_apart: list[Any] = []

    def fields_of(self, obj: Any) -> list:
        name, fields = super().fields_of(obj)
        if self.apart in fields:
            self.set_apart.append(getattr(obj, self.apart))
            fields[self.apart] = 0
        return [name, fields]

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if kind in (set, frozenset):
            items = [self.encode(item) for item in value]
            return {kind.__name__: sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
        return super().encode(value)


class _Decoder:
    """One entry's document: its objects, created empty first (so references can be resolved in
    any order), then filled from their stored fields; the root value last.

    Values are decoded in batches (`decode_each`): the items of a list, or one field of all the
    objects of a class, are checked together, most with one builtin call, and those of one kind
    (all lists, all tuples, all references) are decoded together again, a level down."""

    def __init__(self, document: Any) -> None:
        if not isinstance(document, dict) or set(document) != {"format", "objects", "root"}:
            raise Invalid("not a cache entry")
        if document["format"] != FORMAT or not isinstance(document["objects"], list):
            raise Invalid("unknown entry format")
        records = document["objects"]
        if len(records) > _MAX_OBJECTS:
            raise Invalid("too many objects")
        if not _LISTS.issuperset(map(type, records)) or not {2}.issuperset(map(len, records)):
            raise Invalid("malformed object")
        self.root = document["root"]
        self.records = records
        names = [name for name, _ in records]
        classes = {name: _storable_class(name) for name in set(names)}
        self.shells = list(map(object.__new__, map(classes.__getitem__, names)))

    def value(self) -> Any:
        # Children were encoded after their parents: filling the classes in the reverse order
        # of their first object fills most objects before anything that hashes them.
        for cls, (shells, stored) in reversed(self.by_class().items()):
            layout = _layout(cls)
            if layout is not None:
                layout.fill(shells, stored, self)
            else:
                for obj, attributes in zip(shells, stored):
                    self.fill_attributes(obj, attributes)
        return self.decode(self.root)

    def by_class(self) -> dict[type, tuple[list, list]]:
        """Each class's objects and their stored fields, in the order of their first object."""
        found: dict[type, tuple[list, list]] = {}
        for obj, (_, stored) in zip(self.shells, self.records):
            group = found.get(type(obj))
            if group is None:
                group = found[type(obj)] = ([], [])
            group[0].append(obj)
            group[1].append(stored)
        return found

    def fill_attributes(self, obj: Any, stored: Any) -> None:
        """An object of a class that is not a dataclass: its attributes by name, decoded generically."""
        cls = type(obj)
        if type(stored) is not dict:
            raise Invalid(f"{cls.__qualname__}: malformed attributes")
        for name in stored:
            if not name.isidentifier() or name.startswith("__") or hasattr(cls, name):
                raise Invalid(f"{cls.__qualname__}: attribute {name!r} refused")
        for name, value in zip(stored, self.decode_each(list(stored.values()))):
            object.__setattr__(obj, name, value)

    def decode(self, raw: Any) -> Any:
        """A generically encoded value."""
        kind = type(raw)
        if kind is list:
            return list(self.decode_each(raw))
        if kind is dict:
            tag = _common_tag((raw,))
            if tag is None:
                raise Invalid("malformed value")
            return self.decode_tagged(tag, (raw,))[0]
        return raw  # what else JSON holds: None, a bool, a number or a string

    def decode_each(self, raws: Sequence[Any]) -> Sequence[Any]:
        """Generically encoded values, decoded (`raws` itself when they are all plain, as most are)."""
        kinds = set(map(type, raws))
        if kinds <= _PLAIN_KINDS:
            return raws
        if not kinds.isdisjoint(_PLAIN_KINDS):
            return self.decode_among_plain(raws)
        if kinds == _LISTS:
            return _in_containers(raws, list, self.decode_each)
        tag = _common_tag(raws) if kinds == _DICTS else None
        if tag is not None:
            return self.decode_tagged(tag, raws)
        return list(map(self.decode, raws))  # containers of several kinds: one by one

    def decode_among_plain(self, raws: Sequence[Any]) -> list:
        """Plain values as they are, the others (lists and tagged values) decoded together."""
        decoded = list(raws)
        positions = [position for position, raw in enumerate(raws) if type(raw) is list or type(raw) is dict]
        for position, value in zip(positions, self.decode_each([raws[position] for position in positions])):
            decoded[position] = value
        return decoded

    def decode_tagged(self, tag: str, raws: Sequence[dict]) -> list:
        if tag == "enum":
            return [_member(raw["enum"], raw["name"]) for raw in raws]
        return _TAGS[tag](self, [raw[tag] for raw in raws])

    def references(self, indices: Sequence[Any]) -> list:
        shells = self.shells
        if not _INTS.issuperset(map(type, indices)) or (indices and (min(indices) < 0 or max(indices) >= len(shells))):
            raise Invalid("dangling reference")
        return list(map(shells.__getitem__, indices))

    def containers(self, contents: Sequence[Any], container: type) -> list:
        if not _LISTS.issuperset(map(type, contents)):
            raise Invalid("malformed container")
        return _in_containers(contents, container, self.decode_each)

    def dicts(self, contents: Sequence[Any]) -> list[dict]:
        return [self.pairs(pairs) for pairs in contents]

    def pairs(self, pairs: Any) -> dict:
        if type(pairs) is not list or not _LISTS.issuperset(map(type, pairs)) or not {2}.issuperset(map(len, pairs)):
            raise Invalid("malformed dict")
        if not pairs:
            return {}
        keys, values = zip(*pairs)
        return dict(zip(self.decode_each(keys), self.decode_each(values)))

    def special_floats(self, texts: Sequence[Any]) -> list[float]:
        if not {"inf", "-inf", "nan"}.issuperset(texts):
            raise Invalid("malformed float")
        return list(map(float, texts))


def _common_tag(raws: Sequence[dict]) -> str | None:
    """The tag of every value of a generic batch (`enum` for enum members), when they are all
    tagged alike; else None."""
    tags = {tag for raw in raws for tag in raw}
    if len(tags) == 1 and {1} == set(map(len, raws)):
        (tag,) = tags
        return tag if tag in _TAGS else None
    if tags == {"enum", "name"} and {2} == set(map(len, raws)):
        return "enum"
    return None


def _in_containers(lists: Sequence[list], container: type, decode_each: Callable[[list], Sequence[Any]]) -> list:
    """Each stored list's items in a container of its own, the items of all of them decoded
    together, as one batch a level down."""
    items = list(itertools.chain.from_iterable(lists))
    decoded = decode_each(items)
    if decoded is items:  # every item stands for itself
        return list(map(container, lists))
    remaining = iter(decoded)
    return [container(itertools.islice(remaining, len(raw))) for raw in lists]


# How each tag of the generic encoding is read, for a batch of values alike.
_TAGS: dict[str, Callable[[_Decoder, list], list]] = {
    "ref": _Decoder.references,
    "tuple": lambda decoder, contents: decoder.containers(contents, tuple),
    "set": lambda decoder, contents: decoder.containers(contents, set),
    "frozenset": lambda decoder, contents: decoder.containers(contents, frozenset),
    "dict": _Decoder.dicts,
    "float": _Decoder.special_floats,
}


def _storable_class(name: Any) -> type:
    """The class of a stored object: an analyser class whose objects are data."""
    cls = _lookup(name)
    if issubclass(cls, (enum.Enum, BaseException)):
        raise Invalid(f"{name} cannot be stored")
    return cls


def _member(class_name: Any, name: Any) -> enum.Enum:
    cls = _lookup(class_name)
    if not issubclass(cls, enum.Enum) or type(name) is not str or name not in cls.__members__:
        raise Invalid("unknown enum member")
    return cls[name]


def _lookup(name: Any) -> type:
    """A class of an analyser module that is already imported; never imports anything."""
    if type(name) is str:
        found = _known_classes.get(name)
        if found is None:
            found = _known_classes[name] = _find_class(name)
        return found
    return _find_class(name)


# Classes found by name so far (a class once imported stays what it is; a miss is not kept).
_known_classes: dict[str, type] = {}


def _find_class(name: Any) -> type:
    module_name, _, qualname = name.partition(":") if isinstance(name, str) else ("", "", "")
    module = sys.modules.get(module_name) if _trusted(module_name) else None
    found: Any = module
    for part in qualname.split(".") if qualname else ():
        found = getattr(found, part, None) if part.isidentifier() and not part.startswith("__") else None
    if not isinstance(found, type) or found.__module__ != module_name:
        raise Invalid(f"unknown class {name!r}")
    return found


class _Layout:
    """How a dataclass's objects are stored: their fields' values in declared order, each in
    its codec's form. Built once per class. An entry's objects of one class are decoded a field
    at a time, so that each field's codec checks and decodes the values of all of them together
    (most in one pass of a builtin: a run reads millions of values)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.fields = tuple((name, _codec(hint)) for name, hint in _field_hints(cls).items())
        self.names = tuple(name for name, _ in self.fields)
        self.in_dict = _attributes_in_dict(cls, self.names)

    def fill(self, shells: list, rows: list, decoder: _Decoder) -> None:
        """Set the fields of `shells`, each from its stored row of values."""
        if not _LISTS.issuperset(map(type, rows)) or {len(self.names)} != set(map(len, rows)):
            raise Invalid(f"{self.cls.__qualname__}: not the {len(self.names)} fields it declares")
        rows_of_values = zip(*self.columns(rows, decoder)) if self.fields else itertools.repeat(())
        if self.in_dict:
            for obj, values in zip(shells, rows_of_values):
                vars(obj).update(zip(self.names, values))
            return
        for obj, values in zip(shells, rows_of_values):
            for name, value in zip(self.names, values):
                object.__setattr__(obj, name, value)

    def columns(self, rows: list, decoder: _Decoder) -> list[Sequence[Any]]:
        """Each field's decoded values, a column of them per field."""
        columns = []
        for (name, codec), raws in zip(self.fields, zip(*rows)):
            try:
                columns.append(codec.decode_each(raws, decoder))
            except Invalid as problem:
                raise Invalid(f"{self.cls.__qualname__}.{name}: {problem}") from None
        return columns


@functools.cache
def _layout(cls: type) -> _Layout | None:
    """The layout of a dataclass; None for another class (stored by its attributes' names)."""
    return _Layout(cls) if dataclasses.is_dataclass(cls) else None


def _attributes_in_dict(cls: type, names: tuple[str, ...]) -> bool:
    """Whether setting the fields in the instance's `__dict__` is what `object.__setattr__`
    would do: no slots, and no field name that a data descriptor of the class intercepts."""
    if any("__slots__" in vars(base) for base in cls.__mro__[:-1]):
        return False
    return not any(hasattr(type(getattr(cls, name, None)), "__set__") for name in names)


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """Each field's annotation, resolved in its module; one that cannot be resolved checks nothing."""
    namespace = vars(sys.modules[cls.__module__])
    hints = {}
    for f in dataclasses.fields(cls):
        annotation = f.type
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # noqa: S307 - our own source's annotation, never data
            except Exception:
                annotation = Any
        hints[f.name] = annotation
    return hints


class _Codec:
    """How a field of one annotation is stored. Here, the generic way: encoded generically,
    decoded generically and then checked against the annotation. Each form below falls back to
    this for a value it does not cover, so it accepts whatever the generic path accepts.

    `decode_each` decodes many stored values at once (a field of all of an entry's objects of
    one class, or the items of a list): the forms below check them all with one builtin call
    where they can, and go one by one (through `decode`) where they cannot."""

    def __init__(self, hint: Any) -> None:
        self.hint = hint
        self.check = _checker(hint)

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        return encoder.encode(value)

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        value = decoder.decode(raw)
        if not self.check(value):
            raise Invalid(f"{type(value).__name__} does not fit {self.hint}")
        return value

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        """The decoded values, in order (possibly `raws` itself, when each stands for itself)."""
        return self.one_by_one(raws, decoder)

    def one_by_one(self, raws: Sequence[Any], decoder: _Decoder) -> list:
        """The values decoded each in its own form: where a form's batch does not apply."""
        return list(map(self.decode, raws, itertools.repeat(decoder)))


class _Checked(_Codec):
    """An annotation no form below covers (a union, a literal, a fixed-length tuple, another
    library's class): the values decoded generically, then checked."""

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        values = decoder.decode_each(raws)
        for value in itertools.filterfalse(self.check, values):
            raise Invalid(f"{type(value).__name__} does not fit {self.hint}")
        return values


class _Anything(_Codec):
    """`Any` (or an annotation that cannot be resolved): any data, nothing to check."""

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        return decoder.decode(raw)

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        return decoder.decode_each(raws)


class _Exact(_Codec):
    """`bool`, `int` or `str`: the JSON value of exactly that type, as it is (an int field's
    value is never a bool, whose JSON type is not int)."""

    def __init__(self, hint: type) -> None:
        super().__init__(hint)
        self.kind = hint
        self.kinds = frozenset({hint})

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        return value if type(value) is self.kind else encoder.encode(value)

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        return raw if type(raw) is self.kind else super().decode(raw, decoder)

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        return raws if self.kinds.issuperset(map(type, raws)) else self.one_by_one(raws, decoder)


class _Number(_Codec):
    """`float`: a JSON int or float as it is (a non-finite float keeps its generic tag)."""

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        return raw if type(raw) in _NUMBERS else super().decode(raw, decoder)

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        return raws if _NUMBERS.issuperset(map(type, raws)) else self.one_by_one(raws, decoder)


class _Reference(_Codec):
    """An object of one of the analyser's classes: its index in the entry's list of objects,
    whose shell must be an instance of the annotated class."""

    def __init__(self, hint: type) -> None:
        super().__init__(hint)
        self.cls = hint

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        if isinstance(value, self.cls) and encoder.by_reference(value):
            return encoder.index(value)
        return encoder.encode(value)

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        if type(raw) is not int:
            return super().decode(raw, decoder)
        (found,) = decoder.references((raw,))
        if not isinstance(found, self.cls):
            raise Invalid(f"{type(found).__name__} does not fit {self.hint}")
        return found

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        if _INTS.issuperset(map(type, raws)):
            found = decoder.references(raws)
            if all(map(isinstance, found, itertools.repeat(self.cls))):
                return found
        return self.one_by_one(raws, decoder)  # one by one: the first that does not fit says why


class _Member(_Codec):
    """A member of one of the analyser's enums: its name."""

    def __init__(self, hint: type[enum.Enum]) -> None:
        super().__init__(hint)
        self.cls = hint
        self.members = dict(hint.__members__)

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        return value.name if type(value) is self.cls else encoder.encode(value)

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        if type(raw) is not str:
            return super().decode(raw, decoder)
        member = self.members.get(raw)
        if member is None:
            raise Invalid(f"no member {raw!r} in {self.cls.__qualname__}")
        return member

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        if _STRS.issuperset(map(type, raws)):
            found = list(map(self.members.get, raws))
            if None not in found:
                return found
        return self.one_by_one(raws, decoder)


class _Optional(_Codec):
    """`X | None`: null, or X's form."""

    def __init__(self, hint: Any, inner: _Codec) -> None:
        super().__init__(hint)
        self.inner = inner

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        return None if value is None else self.inner.encode(value, encoder)

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        return None if raw is None else self.inner.decode(raw, decoder)

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        present = [raw for raw in raws if raw is not None]
        if len(present) == len(raws):
            return self.inner.decode_each(raws, decoder)
        decoded = iter(self.inner.decode_each(present, decoder))
        return [None if raw is None else next(decoded) for raw in raws]


class _Collection(_Codec):
    """A list, tuple, set or frozenset of one annotation's items (any data when the annotation
    names none): a JSON list of the items in that annotation's form."""

    def __init__(self, hint: Any, container: type, item: _Codec) -> None:
        super().__init__(hint)
        self.container = container
        self.item = item

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        if type(value) is not self.container:
            return encoder.encode(value)
        return [self.item.encode(item, encoder) for item in value]

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        if type(raw) is not list:
            return super().decode(raw, decoder)
        return self.container(self.item.decode_each(raw, decoder))

    def decode_each(self, raws: Sequence[Any], decoder: _Decoder) -> Sequence[Any]:
        """The items of all the lists decoded together, then put back in their containers."""
        if not _LISTS.issuperset(map(type, raws)):
            return self.one_by_one(raws, decoder)
        return _in_containers(raws, self.container, lambda items: self.item.decode_each(items, decoder))


class _Mapping(_Codec):
    """A dict of one annotation's keys and another's values: `[keys, values]`, two JSON lists
    of the same length, each in its annotation's form."""

    def __init__(self, hint: Any, key: _Codec, value: _Codec) -> None:
        super().__init__(hint)
        self.key = key
        self.value = value

    def encode(self, value: Any, encoder: _Encoder) -> Any:
        if type(value) is not dict:
            return encoder.encode(value)
        return [[self.key.encode(k, encoder) for k in value], [self.value.encode(v, encoder) for v in value.values()]]

    def decode(self, raw: Any, decoder: _Decoder) -> Any:
        if type(raw) is not list:
            return super().decode(raw, decoder)
        if len(raw) != 2 or type(raw[0]) is not list or type(raw[1]) is not list or len(raw[0]) != len(raw[1]):
            raise Invalid("malformed dict")
        return dict(zip(self.key.decode_each(raw[0], decoder), self.value.decode_each(raw[1], decoder)))


# The JSON types of values that some forms take as they are.
_INTS, _STRS, _LISTS, _DICTS = frozenset({int}), frozenset({str}), frozenset({list}), frozenset({dict})
_NUMBERS = frozenset({int, float})


def _codec(hint: Any) -> _Codec:
    """The codec of a field annotated `hint`, built once per annotation."""
    try:
        return _cached_codec(hint)
    except TypeError:  # an unhashable annotation: built each time
        return _build_codec(hint)


@functools.cache
def _cached_codec(hint: Any) -> _Codec:
    return _build_codec(hint)


_COLLECTIONS = (list, tuple, set, frozenset)


def _build_codec(hint: Any) -> _Codec:
    if _checker(hint) is _anything:
        return _Anything(hint)
    if hint in (bool, int, str):
        return _Exact(hint)
    if hint is float:
        return _Number(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if (origin is typing.Union or origin is types.UnionType) and len(arguments) == 2 and type(None) in arguments:
        (inner,) = (argument for argument in arguments if argument is not type(None))
        return _Optional(hint, _codec(inner))
    if hint in _COLLECTIONS or origin in _COLLECTIONS:
        item = _item_annotation(origin or hint, arguments)
        return _Checked(hint) if item is None else _Collection(hint, origin or hint, _codec(item))
    if hint is dict or origin is dict:
        key, value = arguments or (Any, Any)
        return _Mapping(hint, _codec(key), _codec(value))
    if isinstance(hint, type) and _trusted(hint.__module__):
        return _Member(hint) if issubclass(hint, enum.Enum) else _Reference(hint)
    return _Checked(hint)


def _item_annotation(container: type, arguments: tuple) -> Any:
    """The annotation of every item of a list, set or `tuple[X, ...]`; None for a tuple of fixed length."""
    if not arguments:
        return Any
    if container is not tuple:
        return arguments[0]
    return arguments[0] if len(arguments) == 2 and arguments[1] is Ellipsis else None


def _checker(hint: Any) -> Callable[[Any], bool]:
    """The test of a value against `hint`, built once per annotation: a run reads hundreds of
    thousands of stored objects, and taking each annotation apart for every value was most of
    the time a cached run spent loading."""
    try:
        return _cached_checker(hint)
    except TypeError:  # an unhashable annotation: built each time
        return _build_checker(hint)


@functools.cache
def _cached_checker(hint: Any) -> Callable[[Any], bool]:
    return _build_checker(hint)


def _anything(_value: Any) -> bool:
    return True


def _build_checker(hint: Any) -> Callable[[Any], bool]:
    if hint is Any or hint is object or isinstance(hint, (typing.TypeVar, typing.ForwardRef, str)):
        return _anything
    if hint is None or hint is type(None):
        return lambda value: value is None
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        choices = tuple(_checker(argument) for argument in arguments)
        return lambda value: any(check(value) for check in choices)
    if origin is typing.Literal:
        return lambda value: value in arguments
    if origin is typing.ClassVar:
        return _anything
    if origin is not None:
        return _generic_checker(origin, arguments)
    if not isinstance(hint, type):
        return _anything
    if hint is bool:
        return lambda value: type(value) is bool
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return lambda value: type(value) in (int, float)
    if hint in (str, list, tuple, dict, set, frozenset):
        return lambda value: type(value) is hint
    if _trusted(hint.__module__):
        return lambda value: isinstance(value, hint)
    # A type an entry can never hold (a syntax node, released before storing) must be empty.
    return lambda value: value is None


# The container types a value of each generic origin may have.
_CONTAINERS = {
    list: (list,), tuple: (tuple,), set: (set,), frozenset: (frozenset,), dict: (dict,),
    collections.abc.Sequence: (list, tuple), collections.abc.Mapping: (dict,),
    collections.abc.Set: (set, frozenset),
}


def _generic_checker(origin: Any, arguments: tuple) -> Callable[[Any], bool]:
    containers = _CONTAINERS.get(origin)
    if containers is None:
        return lambda _value: False  # a callable, a class object or another non-data type
    if not arguments:
        return lambda value: type(value) in containers
    if dict in containers:
        check_key, check_value = _checker(arguments[0]), _checker(arguments[1])
        return lambda value: type(value) in containers and all(
            check_key(k) and check_value(v) for k, v in value.items()
        )
    if origin is tuple and not (len(arguments) == 2 and arguments[1] is Ellipsis):
        if arguments == ((),):
            return lambda value: type(value) is tuple and len(value) == 0
        checks = tuple(_checker(argument) for argument in arguments)
        return lambda value: type(value) is tuple and len(value) == len(checks) and all(
            check(item) for check, item in zip(checks, value)
        )
    check_item = _checker(arguments[0])
    return lambda value: type(value) in containers and all(map(check_item, value))
