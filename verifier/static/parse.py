"""Parsing with libcst's native parser, without libcst re-validating every node it builds.

libcst calls `_validate()` from every node's `__post_init__`, also for the nodes its own parser
creates from text it has just accepted; that is about an eighth of a parse (libcst's own PERF
note in `CSTNode.__post_init__` suggests taking it out of parsing). The analysis never builds
nodes itself, so the check is off while the parser runs and back on as soon as it returns.
"""

from __future__ import annotations

import threading

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
        CSTNode.__post_init__ = _unchecked
        try:
            return cst.parse_module(text)
        finally:
            CSTNode.__post_init__ = original
