"""`verify-perf - --stdin-filename train.py`: the source comes from standard input (an editor's
unsaved buffer, a generated file) and is analysed as the file of that name.

The name decides everything a file's path decides: the configuration found above it, the
project it lends and takes heat from, its per-file-ignores and excludes (with --force-exclude),
and the path findings are reported under. The text stands in for the file while the run lasts
(`verifier.static.source.stand_in`), so the analysis sees it exactly as it would see the file,
the file on disk (if any) is neither read nor written, and no report or cache entry is written
unless asked for (`--report-dir`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator

from verifier.errors import UsageError
from verifier.static.discovery import PYTHON_SUFFIXES, display_path
from verifier.static.source import UnreadableSource, format_size, stand_in

STDIN = "-"
_CHUNK = 1 << 16


def stdin_name(args: argparse.Namespace) -> str | None:
    """The name standard input is analysed under, or None when the run reads files. Checks the
    options that cannot apply to it; the run then reads that name as its one path."""
    if args.paths != [STDIN]:
        return None
    name = args.stdin_filename
    if name is None:
        raise UsageError(
            "`-` reads the source from standard input: name its file with --stdin-filename NAME.py "
            "(findings are reported under that name, and configuration is found from it)"
        )
    if os.path.isdir(name):
        raise UsageError(f"--stdin-filename {display_path(name)}: a folder, not a file name")
    if not name.endswith(PYTHON_SUFFIXES):
        raise UsageError(
            f"--stdin-filename {display_path(name)}: not a Python file name (expected a .py or .ipynb name)"
        )
    for option, given in (("--diff", args.diff), ("--add-noqa", args.add_noqa)):
        if given:
            raise UsageError(f"{option} works on files in the work tree; it cannot take standard input")
    return os.path.normpath(name)


@contextlib.contextmanager
def reading_stdin(name: str, max_size: int | None) -> Iterator[None]:
    """While the block runs, the source read from standard input is the file `name`."""
    with stand_in(name, read_stdin(max_size)):
        yield


def read_stdin(max_size: int | None) -> bytes | UnreadableSource:
    """Standard input's bytes; a source over `max_size` is reported as a file over it is (VP900),
    without reading more of it than the limit (`yes | verify-perf -` ends)."""
    if sys.stdin is None:
        raise UsageError("standard input is closed: nothing to read for `-`")
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UsageError("standard input cannot be read as bytes")
    chunks, size = [], 0
    limit = None if max_size is None else max_size + 1
    try:
        while limit is None or size < limit:
            chunk = stream.read(_CHUNK if limit is None else min(_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise UsageError(f"cannot read standard input: {error.strerror or error}") from None
    if max_size is not None and size > max_size:
        return UnreadableSource(
            f"not analysed: standard input holds more than the limit of {format_size(max_size)} (max-file-size)",
            unanalysable=True,
        )
    return b"".join(chunks)
