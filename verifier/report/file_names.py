"""File names are bytes: how a name that is not valid UTF-8 appears in each output.

Such a name is held as a string with surrogate escapes (as `os.listdir` gives it). Text and
GitHub output write those bytes back unchanged, so an editor or the runner finds the file;
JSON escapes them (`\\udce9`, which `json.loads` and `os.fsencode` turn back into the bytes);
SARIF percent-encodes the bytes in the URI; markdown shows them as `\\xe9`.

A name may also hold characters that steer whatever shows a line-oriented output: a newline or
carriage return (a file named `x\\nDecision: PASS.py` printed a line of its own), an escape
sequence for the terminal or the CI log, a Unicode line separator, a right-to-left override.
Text, terminal and GitHub output write each such character as its Python escape instead.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from urllib.parse import quote

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab, DEL and C1 controls, the line and paragraph separators, and the
# bidirectional embeddings, overrides and isolates.
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_safe(text: str) -> str:
    """JSON text with each lone surrogate written as a `\\uXXXX` escape (valid UTF-8 JSON)."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def line_safe(text: str) -> str:
    """`text` as what it is on one line: each unprintable character written as its escape
    (`\\n`, `\\x1b`, `\\u202e`); surrogates (bytes of a name) are left to the output's encoding."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def frame_safe(text: str) -> str:
    """A source line for a code frame: each unprintable character shown as one visible glyph
    (`␛` for an escape, as ruff shows them), so the columns under it still line up."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda match: _glyph(match.group()), text)


def _glyph(character: str) -> str:
    code = ord(character)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def markdown_safe(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def uri_path(path: str) -> str:
    """A relative path as a URI reference, its bytes percent-encoded."""
    return quote(os.fsencode(PurePath(path).as_posix()))
