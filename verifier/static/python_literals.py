"""Python's own parser, for the quick looks taken before the analysis (configuration defaults,
constructor switches): a parse that never warns or raises, and the literal a node spells."""

from __future__ import annotations

import ast
import warnings

# Not a literal, or one of a kind a default cannot be compared as (a list, a call).
UNKNOWN = object()


def parsed(text: str) -> ast.AST | None:
    """Python's own tree of `text`, None when it does not parse (its analysis says why)."""
    try:
        with warnings.catch_warnings():
            # `"\."` in a user's string is their warning to see from Python, not ours to print.
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def literal(node: ast.expr) -> object:
    """The number, string, bool or None `node` spells; `UNKNOWN` for anything else."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
    return value if value is None or type(value) in (bool, int, float, str) else UNKNOWN
