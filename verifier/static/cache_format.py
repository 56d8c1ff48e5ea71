"""The results cache's file format: JSON that can only describe data, checked on every read.

A cache folder may come from anywhere (a committed directory, a restored CI cache), so reading
an entry must never run code and never hand the run something it does not expect. An entry is
`<HMAC-SHA256 of its name and body>\\n<body>`, signed with a key kept outside every project
(`cache_key`): an entry made anywhere else, or edited and signed again without the key, is
`Invalid` before its body is parsed, and the name in the MAC stops an entry being moved to
another key. The body is a graph of the analysis' own result objects (a file's findings and its
heat summary, whose shape changes as the heat model grows) encoded generically: plain JSON
values, tagged tuples, sets, dicts and enum members, and objects by reference. Decoding only
accepts classes defined in the analyser's own, already imported modules, creates them without
calling any constructor, sets exactly the fields their class declares, and checks every value
against the field's annotation. Anything else is `Invalid`, which the cache treats as a miss.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import hashlib
import hmac
import json
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

FORMAT = 3
# Modules whose classes may appear in an entry; nothing is ever imported because of an entry.
_TRUSTED_MODULES = ("verifier.findings", "verifier.static.")
_MAX_OBJECTS = 5_000_000


class Invalid(Exception):
    """The bytes are not an entry this build wrote (corrupt, foreign or crafted)."""


class Unencodable(Exception):
    """The value holds something that is not data (a syntax tree, a function, a foreign object)."""


def dumps(value: Any, key: bytes, name: str) -> bytes:
    """The entry stored as `name`, signed with `key`."""
    body = json.dumps(_Encoder().document(value), separators=(",", ":"), allow_nan=False).encode()
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
        if _trusted(kind.__module__) and hasattr(value, "__dict__") and not callable(value):
            index = self.ids.get(id(value))
            if index is None:
                index = self.ids[id(value)] = len(self.objects)
                self.objects.append(value)
            return {"ref": index}
        raise Unencodable(f"{kind.__module__}.{kind.__qualname__} is not data")


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
    def __init__(self, document: Any) -> None:
        if not isinstance(document, dict) or set(document) != {"format", "objects", "root"}:
            raise Invalid("not a cache entry")
        if document["format"] != FORMAT or not isinstance(document["objects"], list):
            raise Invalid("unknown entry format")
        records = document["objects"]
        if len(records) > _MAX_OBJECTS:
            raise Invalid("too many objects")
        self.root = document["root"]
        self.records = records
        self.shells = [self.shell(record) for record in records]

    def shell(self, record: Any) -> Any:
        if not (isinstance(record, list) and len(record) == 2 and isinstance(record[0], str) and isinstance(record[1], dict)):
            raise Invalid("malformed object")
        cls = _lookup(record[0])
        if issubclass(cls, (enum.Enum, BaseException)):
            raise Invalid(f"{record[0]} cannot be stored")
        return object.__new__(cls)

    def value(self) -> Any:
        # Children were encoded after their parents: filling in reverse fills most objects
        # before anything that hashes them.
        for index in reversed(range(len(self.records))):
            self.fill(self.shells[index], self.records[index][1])
        return self.decode(self.root)

    def fill(self, obj: Any, stored: dict) -> None:
        cls = type(obj)
        fields = _field_checks(cls)
        if fields is not None:
            names, checks = fields
            if stored.keys() != names:
                raise Invalid(f"{cls.__qualname__}: fields {sorted(stored)} are not {sorted(names)}")
            for name, hint, check in checks:
                value = self.decode(stored[name])
                if not check(value):
                    raise Invalid(f"{cls.__qualname__}.{name}: {type(value).__name__} does not fit {hint}")
                object.__setattr__(obj, name, value)
            return
        for name, raw in stored.items():
            if not name.isidentifier() or name.startswith("__") or hasattr(cls, name):
                raise Invalid(f"{cls.__qualname__}: attribute {name!r} refused")
            object.__setattr__(obj, name, self.decode(raw))

    def decode(self, raw: Any) -> Any:
        kind = type(raw)
        if raw is None or kind in (bool, int, float, str):
            return raw
        if kind is list:
            return [self.decode(item) for item in raw]
        if kind is not dict or len(raw) not in (1, 2):
            raise Invalid("malformed value")
        if "ref" in raw and len(raw) == 1:
            index = raw["ref"]
            if type(index) is not int or not 0 <= index < len(self.shells):
                raise Invalid("dangling reference")
            return self.shells[index]
        if "enum" in raw and set(raw) == {"enum", "name"}:
            cls = _lookup(raw["enum"])
            if not issubclass(cls, enum.Enum) or not isinstance(raw["name"], str) or raw["name"] not in cls.__members__:
                raise Invalid("unknown enum member")
            return cls[raw["name"]]
        if len(raw) != 1:
            raise Invalid("malformed value")
        (tag, items), = raw.items()
        if tag == "float":
            if items not in ("inf", "-inf", "nan"):
                raise Invalid("malformed float")
            return float(items)
        if not isinstance(items, list):
            raise Invalid("malformed container")
        if tag == "tuple":
            return tuple(self.decode(item) for item in items)
        if tag == "set":
            return {self.decode(item) for item in items}
        if tag == "frozenset":
            return frozenset(self.decode(item) for item in items)
        if tag == "dict":
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in items):
                raise Invalid("malformed dict")
            return {self.decode(k): self.decode(v) for k, v in items}
        raise Invalid(f"unknown tag {tag!r}")


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


@functools.cache
def _field_checks(cls: type) -> tuple[frozenset[str], tuple[tuple[str, Any, Callable[[Any], bool]], ...]] | None:
    """A dataclass's field names and each field's (name, annotation, test); None for another class."""
    if not dataclasses.is_dataclass(cls):
        return None
    hints = _field_hints(cls)
    return frozenset(hints), tuple((name, hint, _checker(hint)) for name, hint in hints.items())


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
