"""Whole numbers read from text a user controls: options, the environment, config, baselines.

`str.isdigit` accepts `²` and `int` accepts `٣`, spaces, signs and underscores, and Python
refuses to convert more than 4,300 digits at all (a ValueError deep in a run). So the text is
checked first: ASCII digits only, and no more of them than the largest allowed value has, before
anything is converted. A bad value is one clear line, never an internal error.
"""

from __future__ import annotations

# Longest text quoted back in a message: a 5,000-digit value is named, not printed.
_SHOWN = 40
# Integers a baseline may hold (line numbers, byte counts, parameter counts) have far fewer digits.
MAX_JSON_DIGITS = 30


def parse_whole(text: str, low: int, high: int) -> int:
    """`text` as an integer from `low` to `high` (both >= 0); ValueError naming the range."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"expected an integer from {low} to {high}, got {shown(text)}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(high)) or not low <= int(digits) <= high:
        raise ValueError(f"expected an integer from {low} to {high}, got {shown(text)}")
    return int(digits)


def json_integer(text: str) -> int:
    """`parse_int` for json.loads: a number with more digits than any count a report holds is
    refused before conversion."""
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_JSON_DIGITS} are read)")
    return int(text)


def shown(text: str) -> str:
    """`text` quoted for a message, cut to a readable length."""
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text)} characters)"
