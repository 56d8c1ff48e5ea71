"""Reading a file into text the way Python would, or saying clearly why not."""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass
from io import BytesIO

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class UnreadableSource(Exception):
    """The file cannot be read or decoded; the message says why, for a VP900 finding."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Source:
    data: bytes
    text: str
    encoding: str

    def lines(self) -> list[str]:
        """Lines as Python counts them (form feeds and other separators do not break lines)."""
        return _LINE_BREAK.split(self.text)


def read_source(path: str) -> Source:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise UnreadableSource(f"cannot read file: {error.strerror or error}") from None
    return decode_source(data)


def decode_source(data: bytes) -> Source:
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError as error:
        raise UnreadableSource(f"cannot decode file: {error}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        line = data[: getattr(error, "start", 0)].count(b"\n") + 1
        raise UnreadableSource(f"cannot decode file as {encoding}: {error.reason if hasattr(error, 'reason') else error}", line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return Source(data, text, encoding)
