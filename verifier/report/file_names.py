"""File names are bytes: how a name that is not valid UTF-8 appears in each output.

Such a name is held as a string with surrogate escapes (as `os.listdir` gives it). Text and
GitHub output write those bytes back unchanged, so an editor or the runner finds the file;
JSON escapes them (`\\udce9`, which `json.loads` and `os.fsencode` turn back into the bytes);
SARIF percent-encodes the bytes in the URI; markdown shows them as `\\xe9`.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath
from urllib.parse import quote

_SURROGATE = re.compile("[\ud800-\udfff]")


def json_safe(text: str) -> str:
    """JSON text with each lone surrogate written as a `\\uXXXX` escape (valid UTF-8 JSON)."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def markdown_safe(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def uri_path(path: str) -> str:
    """A relative path as a URI reference, its bytes percent-encoded."""
    return quote(os.fsencode(PurePath(path).as_posix()))
