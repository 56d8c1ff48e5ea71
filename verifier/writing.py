"""Writing output files (reports, `-o FILE`) so that nothing is lost, half-written or replaced.

- `-o -` is standard output (the POSIX convention).
- A regular file is written through a temporary file and a rename in its folder, so a reader
  never sees half of it and an interrupted write leaves the previous file intact. A new file
  gets the permissions the user's umask allows; a replaced file keeps its own.
- An existing file is replaced only when this user may write it (as `> FILE` in a shell would)
  and verify-perf wrote it (it carries the signature of one of its output formats) or it is
  empty, or with `--force`: a hand-written `reports/train.md` is never overwritten silently.
- A symbolic link is followed to the file it names, which the same rules protect; the link
  stays a link. Terminals, `/dev/null` and FIFOs with a reader are written as streams; a
  directory, a FIFO nobody reads, a socket or a block device is refused.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import sys

from verifier.errors import UsageError
from verifier.static.source import UnreadableSource, read_bytes

STDOUT = "-"
# Signatures of verify-perf's own outputs; an existing file matching one may be replaced.
_MARKDOWN_TITLE = "# Performance Verification Report - "
_MARKDOWN_VERIFIER_ROW = "\n| Verifier | verify-perf "
_TEXT_LINE = re.compile(
    r".*:\d+:\d+: VP\d{3} \[(CRITICAL|HIGH|MEDIUM|LOW|INFO)\] .*"
    r"|(Score|Baseline|Found|No findings|Nothing analysed|Decision)\b.*"
    r"|::(error|warning|notice) .*|\s+.*"
    r"|\d+\tVP\d{3}\t.*"  # --statistics
)
_MAX_RECOGNISED_SIZE = 64 * 1024 * 1024


def write_output(path: str, text: str, *, force: bool = False) -> None:
    """Write `text` to `path` under the rules above; UsageError (exit 2) when refused."""
    if path == STDOUT:
        write_stdout(text)
        return
    shown = path
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
    if status is not None and stat.S_ISLNK(status.st_mode):
        path = os.path.realpath(path)
        try:
            status = os.stat(path)
        except FileNotFoundError:
            status = None  # a link to a file not there yet: created where the link points
        except OSError as error:
            raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
    if status is None:
        _replace(path, text, mode=None)
        return
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {shown}: it is a directory")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        _stream(path, shown, text)
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"cannot write {shown}: it is not a regular file, a terminal, a device or a FIFO")
    if not os.access(path, os.W_OK):
        # A rename in a writable folder could replace it anyway; `> FILE` in a shell could not.
        raise UsageError(f"cannot write {shown}: Permission denied (the file is not writable for this user)")
    if status.st_size and not force and not written_by_verify_perf(path):
        raise UsageError(
            f"refusing to replace {shown}: verify-perf did not write it (pass --force to replace it, "
            "or choose another file)"
        )
    _replace(path, text, mode=stat.S_IMODE(mode))


def written_by_verify_perf(path: str) -> bool:
    """True when the file carries the signature of one of verify-perf's output formats."""
    try:
        text = read_bytes(path, _MAX_RECOGNISED_SIZE).decode("utf-8", "surrogateescape")
    except UnreadableSource:
        return False
    if text.startswith(_MARKDOWN_TITLE) and _MARKDOWN_VERIFIER_ROW in text:
        return True
    if text.lstrip().startswith("{"):
        return _json_signature(text)
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_TEXT_LINE.fullmatch(line) for line in lines)


def _json_signature(text: str) -> bool:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(document, dict):
        return False
    tool = document.get("tool")
    if isinstance(tool, dict) and tool.get("name") == "verify-perf":
        return True
    runs = document.get("runs")
    try:
        return runs[0]["tool"]["driver"]["name"] == "verify-perf"
    except (TypeError, KeyError, IndexError):
        return False


def _replace(path: str, text: str, *, mode: int | None) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(path)
    try:
        try:
            os.makedirs(folder, exist_ok=True)
        except FileExistsError:
            raise UsageError(f"cannot write {path}: {folder} is not a folder (a file, or a link to a missing folder)") from None
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.verify-perf.tmp")
        # 0o666 less the umask, as any program creating a file gives it.
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            # Surrogates stand for the bytes of a file name that is not UTF-8: write those bytes.
            with os.fdopen(handle, "w", encoding="utf-8", errors="surrogateescape", newline="\n") as stream:
                stream.write(text)
                if mode is not None:
                    os.fchmod(stream.fileno(), mode)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def _stream(path: str, shown: str, text: str) -> None:
    """A terminal, /dev/null or a FIFO: written in place, never created or replaced."""
    try:
        # Non-blocking first: a FIFO without a reader would otherwise wait forever.
        handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise UsageError(f"cannot write {shown}: it is a FIFO that no process is reading") from None
        raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
    try:
        os.set_blocking(handle, True)
        with os.fdopen(handle, "wb", closefd=False) as stream:
            stream.write(text.encode("utf-8", "surrogateescape"))
    except OSError as error:
        raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
    finally:
        os.close(handle)


def replace_file_bytes(path: str, data: bytes) -> None:
    """Replace an existing file (a user's source, for `--add-noqa`) atomically, keeping its
    permissions; a symbolic link keeps pointing at the file it named, which is the one rewritten."""
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.verify-perf.tmp")
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                os.fchmod(stream.fileno(), mode)
            os.replace(temporary, target)
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
    encoding = stream.encoding or "utf-8"
    try:
        data = text.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:  # a terminal that cannot show some character (e.g. an ASCII locale)
        data = text.encode(encoding, "backslashreplace")
    stream.flush()
    buffer.write(data)
    buffer.flush()
