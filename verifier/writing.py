"""Writing output files (reports, `-o FILE`) so that a reader never sees half of one."""

from __future__ import annotations

import os
import sys
import tempfile

from verifier.errors import UsageError


def write_atomically(path: str, text: str) -> None:
    """Write via a temporary file and rename, so a reader never sees half a report.

    An interrupted or failed write leaves the previous file untouched.
    """
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".verify-perf-", suffix=".tmp")
        try:
            # Surrogates stand for the bytes of a file name that is not UTF-8: write those bytes.
            with os.fdopen(handle, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as stream:
                stream.write(text)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def write_stdout(text: str) -> None:
    """Standard output, with undecodable file-name bytes written back as the bytes they were."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
        return
    stream.flush()
    buffer.write(text.encode(stream.encoding or "utf-8", "surrogateescape"))
    buffer.flush()
