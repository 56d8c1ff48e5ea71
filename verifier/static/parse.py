"""Parsing with libcst's native parser, without libcst re-validating every node it builds.

libcst calls `_validate()` from every node's `__post_init__`, also for the nodes its own parser
creates from text it has just accepted; that is about an eighth of a parse (libcst's own PERF
note in `CSTNode.__post_init__` suggests taking it out of parsing). The analysis never builds
nodes itself, so the check is off while the parser runs and back on as soon as it returns.

While it runs, each node class also builds its nodes with a constructor that sets the same
fields, in the same order and with the same defaults, as its dataclass `__init__`, minus the
`__post_init__` call that would only return (about 4 % of a parse). It stores each field
through the slot that `object.__setattr__` would find for it, without looking it up by name
again for every node (about 5 % more). A class whose `__init__` is not the plain dataclass one
keeps its own.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import types

import libcst as cst

try:
    from libcst._nodes.base import CSTNode
except ImportError:  # a libcst without that module: parse as libcst does
    CSTNode = None

# One parse at a time switches the check off, so that every parse puts back what it found.
_SWITCH = threading.Lock()


def _unchecked(self: object) -> None:
    return None


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module(text)`, skipping the validation of parser-built nodes."""
    original = CSTNode.__dict__.get("__post_init__") if CSTNode is not None else None
    if original is None:
        return cst.parse_module(text)
    with _SWITCH:
        constructors = _unchecked_constructors()
        CSTNode.__post_init__ = _unchecked
        for node_class, unchecked, _ in constructors:
            node_class.__init__ = unchecked
        try:
            return cst.parse_module(text)
        finally:
            for node_class, _, checked in constructors:
                node_class.__init__ = checked
            CSTNode.__post_init__ = original


@functools.cache
def _unchecked_constructors() -> tuple[tuple[type, object, object], ...]:
    """(class, its unchecked `__init__`, its own `__init__`) for every node class whose own
    `__init__` is the one `dataclasses` wrote."""
    found = []
    pending, seen = list(CSTNode.__subclasses__()), set()
    while pending:
        node_class = pending.pop()
        if node_class in seen:
            continue
        seen.add(node_class)
        pending.extend(node_class.__subclasses__())
        own = node_class.__dict__.get("__init__")
        unchecked = _constructor_without_check(node_class, own) if own is not None else None
        if unchecked is not None:
            found.append((node_class, unchecked, own))
    return tuple(found)


def _constructor_without_check(node_class: type, own: object) -> object | None:
    """An `__init__` like `own` without its `__post_init__` call; None unless `own` is the plain
    dataclass constructor of exactly these fields and the only `__post_init__` it would call is
    the check (one written here could differ from it)."""
    if (
        not dataclasses.is_dataclass(node_class)
        or getattr(getattr(own, "__code__", None), "co_filename", "") != "<string>"
        or node_class.__post_init__ is not CSTNode.__post_init__
    ):
        return None
    fields = dataclasses.fields(node_class)
    try:
        parameters = list(inspect.signature(own).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if [p.name for p in parameters] != [f.name for f in fields] or any(
        not f.init or f.kw_only is True or p.kind is not p.POSITIONAL_OR_KEYWORD for f, p in zip(fields, parameters)
    ):
        return None
    namespace: dict[str, object] = {"_set": object.__setattr__, "_no_value": dataclasses.MISSING}
    signature, body = [], []
    for index, field in enumerate(fields):
        slot = _slot_of(node_class, field.name)
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{index}"] = field.default
            signature.append(f"{field.name}=_default_{index}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{index}"] = field.default_factory
            signature.append(f"{field.name}=_no_value")
            body.append(f" if {field.name} is _no_value: {field.name} = _factory_{index}()")
        else:
            signature.append(field.name)
        if slot is None:
            body.append(f" _set(self, {field.name!r}, {field.name})")
        else:
            namespace[f"_store_{index}"] = slot.__set__
            body.append(f" _store_{index}(self, {field.name})")
    exec(f"def __init__(self, {', '.join(signature)}):\n" + "\n".join(body or [" pass"]), namespace)  # noqa: S102
    return namespace["__init__"]


def _slot_of(node_class: type, name: str) -> types.MemberDescriptorType | None:
    """The slot that `object.__setattr__(node, name, ...)` stores into: the first definition of
    `name` along the class's MRO, when that is a slot; None otherwise (then it is called)."""
    for klass in node_class.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            return found if type(found) is types.MemberDescriptorType else None
    return None
