"""Putting a fixed file in place of the original, whole or not at all.

The new bytes go to a temporary file in the same folder, which then replaces the file by rename
(`verifier.writing.replace_file_bytes`): a reader, or a crash, sees the old file or the new one,
never half of one. The file keeps its permissions, and a symbolic link keeps pointing at it. A
file this user may not write is left alone, as `> FILE` in a shell would leave it (a rename in a
writable folder could replace it anyway), and so is a file that changed since it was read.
"""

from __future__ import annotations

import os

from verifier.errors import UsageError
from verifier.writing import replace_file_bytes


class NotWritten(Exception):
    """The fixed file was not written; the message says why."""


def rewrite_source(path: str, read: bytes, fixed: bytes) -> None:
    """Replace `path`, which held `read` when the fixes were made, with `fixed`; NotWritten if not."""
    target = os.path.realpath(path)
    if not os.access(target, os.W_OK):
        raise NotWritten("Permission denied (the file is not writable for this user)")
    try:
        with open(target, "rb") as stream:
            now = stream.read()
    except OSError as error:
        raise NotWritten(error.strerror or str(error)) from None
    if now != read:
        raise NotWritten("it changed while verify-perf was fixing it")
    try:
        replace_file_bytes(path, fixed)
    except UsageError as error:
        raise NotWritten(str(error).removeprefix(f"cannot write {path}: ")) from None
