"""Reading a file into text the way Python would, or saying clearly why not.

Only regular files are read, and never more than a size limit: a `.py` that is a FIFO, a
device or a link to one would block or stream forever.

A file's bytes may be stood in for (`stand_in`): source read from standard input under the name
`--stdin-filename` gives. Every reader of a file's bytes comes through `read_bytes`, so the
analysis, its worker processes and the fingerprints all see that text, and no file is written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tokenize
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from io import BytesIO

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BYTE_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_SURROGATE = re.compile("[\ud800-\udfff]")
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"),
)


class UnreadableSource(Exception):
    """The file cannot be read or decoded; the message says why, for a VP900 finding.

    `unanalysable` is True when the file may well be valid Python that could not be looked at
    (too large, unreadable): the gate then fails closed. Decoding errors and non-regular files
    are not Python source at all.
    """

    def __init__(self, message: str, line: int = 1, *, unanalysable: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.unanalysable = unanalysable

    def __reduce__(self):
        # Sent to worker processes as a stand-in's reason: pickled with every field, not only the message.
        return _unreadable, (str(self), self.line, self.unanalysable)


def _unreadable(message: str, line: int, unanalysable: bool) -> UnreadableSource:
    return UnreadableSource(message, line, unanalysable=unanalysable)


@dataclass(frozen=True)
class Source:
    data: bytes
    text: str
    encoding: str

    def lines(self) -> list[str]:
        """Lines as Python counts them (form feeds and other separators do not break lines)."""
        return split_lines(self.text)


def split_lines(text: str) -> list[str]:
    """`text` split where Python breaks lines: `\\r\\n`, `\\r` and `\\n`, nothing else (not
    `str.splitlines`, which also breaks at form feeds and Unicode separators)."""
    # Without a carriage return the three line breaks are one: a plain split, at C speed.
    return text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)


def with_newlines(text: str) -> str:
    """`text` with each of Python's line breaks written `\\n`: the same lines and columns, so a
    scan or a tokenizer that reads lines by `\\n` numbers them as Python does."""
    return text if "\r" not in text else _LINE_BREAK.sub("\n", text)


# Absolute path -> the bytes that stand in for the file there, or why they could not be read.
_STAND_INS: dict[str, bytes | UnreadableSource] = {}


@contextlib.contextmanager
def stand_in(path: str, data: bytes | UnreadableSource) -> Iterator[None]:
    """While the block runs, `read_bytes(path)` returns `data` (or raises it), whatever is on disk.
    Blocks nest: afterwards the path reads what it read before (`--fix` on standard input)."""
    key = os.path.abspath(path)
    before = _STAND_INS.get(key)
    _STAND_INS[key] = data
    try:
        yield
    finally:
        if before is None:
            _STAND_INS.pop(key, None)
        else:
            _STAND_INS[key] = before


def stand_ins() -> dict[str, bytes | UnreadableSource]:
    """Every stand-in of this process, for a worker process to install (`install_stand_ins`)."""
    return dict(_STAND_INS)


def install_stand_ins(stood_in: Mapping[str, bytes | UnreadableSource]) -> None:
    _STAND_INS.clear()
    _STAND_INS.update(stood_in)


def has_stand_in(path: str) -> bool:
    return bool(_STAND_INS) and os.path.abspath(path) in _STAND_INS


def read_bytes(path: str, max_size: int | None = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The bytes of a regular file of at most `max_size` bytes; UnreadableSource otherwise.

    Opened without blocking (a FIFO would wait for a writer) and checked on the open handle,
    so a link swapped for a device between the check and the read is still refused.
    """
    if _STAND_INS:
        stood_in = _STAND_INS.get(os.path.abspath(path))
        if isinstance(stood_in, UnreadableSource):
            raise stood_in
        if stood_in is not None:
            if max_size is not None and len(stood_in) > max_size:
                raise _too_large(len(stood_in), max_size)
            return stood_in
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        if error.errno == errno.ENOENT and os.path.islink(path):
            raise UnreadableSource("cannot read file: it is a symbolic link to a missing file") from None
        if error.errno == errno.ELOOP:
            raise UnreadableSource("cannot read file: its symbolic links form a loop") from None
        kind = _special_kind(path)  # a socket cannot even be opened
        if kind is not None:
            raise UnreadableSource(f"not read: it is {kind}, not a regular file") from None
        raise UnreadableSource(f"cannot read file: {error.strerror or error}", unanalysable=True) from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = next((name for test, name in _KINDS if test(status.st_mode)), "not a regular file")
            raise UnreadableSource(f"not read: it is {kind}, not a regular file")
        if max_size is not None and status.st_size > max_size:
            raise _too_large(status.st_size, max_size)
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read() if max_size is None else handle.read(max_size + 1)
    except OSError as error:
        raise UnreadableSource(f"cannot read file: {error.strerror or error}", unanalysable=True) from None
    finally:
        os.close(descriptor)
    if max_size is not None and len(data) > max_size:  # it grew while being read
        raise _too_large(len(data), max_size)
    return data


def _special_kind(path: str) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((name for test, name in _KINDS if test(mode)), None)


def _too_large(size: int, limit: int) -> UnreadableSource:
    return UnreadableSource(
        f"not analysed: the file is {format_size(size)}, over the limit of {format_size(limit)} "
        "(max-file-size)",
        unanalysable=True,
    )


def format_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def read_source(path: str, max_size: int | None = DEFAULT_MAX_FILE_SIZE) -> Source:
    return decode_source(read_bytes(path, max_size))


def decode_source(data: bytes) -> Source:
    if b"\0" in data:
        # Python refuses such a file before reading a line of it, whatever its encoding says.
        line = len(_BYTE_LINE_BREAK.split(data[: data.index(b"\0")]))
        raise UnreadableSource("syntax error: source code cannot contain null bytes", line)
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError as error:
        raise UnreadableSource(f"cannot decode file: {error}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeError, LookupError) as error:  # UnicodeError: `undefined`, `punycode`
        line = len(_BYTE_LINE_BREAK.split(data[: getattr(error, "start", 0)]))
        reason = error.reason if isinstance(error, UnicodeDecodeError) else str(error)
        raise UnreadableSource(f"cannot decode file as {encoding}: {_printable(reason)}", line) from None
    if encoding not in _NO_SURROGATES and (surrogate := _SURROGATE.search(text)):
        # `unicode_escape` and kin decode `\\ud800` to a lone surrogate, which Python refuses too.
        line = len(split_lines(text[: surrogate.start()]))
        raise UnreadableSource(
            f"cannot decode file as {encoding}: it decodes to a lone surrogate "
            f"(U+{ord(surrogate.group()):04X}), which Python source cannot hold",
            line,
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return Source(data, text, encoding)


def _printable(text: str) -> str:
    """One line: a codec's message may quote the newline it choked on."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


# Strict UTF-8 never decodes to a surrogate: the common case skips the search.
_NO_SURROGATES = frozenset({"utf-8", "utf-8-sig"})
