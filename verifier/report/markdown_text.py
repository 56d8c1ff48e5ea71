"""Putting arbitrary text into markdown without breaking it: code fences, code spans, table cells."""

from __future__ import annotations

import re

_BACKTICK_RUN = re.compile(r"`+")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)


def fenced_block(text: str, language: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside `text`."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    body = text.rstrip("\n")
    return f"{fence}{language}\n{body}\n{fence}"


def code_span(text: str) -> str:
    """Inline code that survives backticks in `text` (CommonMark: a longer delimiter plus padding)."""
    text = " ".join(text.splitlines())
    ticks = "`" * (_longest_backtick_run(text) + 1)
    if text.startswith("`") or text.endswith("`"):
        return f"{ticks} {text} {ticks}"
    return f"{ticks}{text}{ticks}"


def table_cell(text: object) -> str:
    """One table cell: pipes escaped and line breaks folded, so the row stays one row."""
    flat = " ".join(str(text).splitlines())
    return flat.replace("|", "\\|")


def table_row(values) -> str:
    return "| " + " | ".join(table_cell(value) for value in values) + " |"


def table_divider(values) -> str:
    return "|" + " --- |" * len(values)
