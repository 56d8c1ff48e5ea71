"""Writing output files (reports, `-o FILE`) so that nothing is lost, half-written or replaced.

- `-o -` is standard output (the POSIX convention); `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`
  and `/proc/self/fd/N` are the descriptors they name, written where they stand, as a shell
  does (never a file replaced behind a redirection).
- A regular file is written through a temporary file and a rename in its folder, so a reader
  never sees half of it and an interrupted write leaves the previous file intact. A new file
  gets the permissions the user's umask allows; a replaced file keeps its own.
- An existing file is replaced only when this user may write it (as `> FILE` in a shell would)
  and it is empty, or verify-perf wrote it and it is unchanged since (the folder's record of the
  files verify-perf wrote lists it with the digest of what it holds: `output_record`), or with
  `--force`: a hand-written `reports/train.md` is never overwritten silently.
- A symbolic link is followed to the file it names, which the same rules protect; the link
  stays a link. Terminals, `/dev/null` and FIFOs with a reader are written as streams; a
  directory, a FIFO nobody reads, a socket or a block device is refused.
- Every target is checked (`output_target`) before anything is written, so a refused `-o`
  leaves the report unwritten as well; one that fails only when written (a full device) is
  written before the report, for the same reason.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import sys
from dataclasses import dataclass

from verifier import output_record
from verifier.errors import UsageError

STDOUT = "-"
# Names a shell treats as descriptors rather than files.
_DESCRIPTOR_NAME = re.compile(r"/dev/(?P<std>stdout|stderr)|/dev/fd/(?P<fd>[0-9]{1,6})|/proc/self/fd/(?P<proc>[0-9]{1,6})")


@dataclass(frozen=True)
class OutputTarget:
    """Where an output goes, once checked: standard output, an open descriptor, a stream
    (terminal, device, FIFO) or a regular file (`path`, links resolved) to create or replace."""

    named: str
    kind: str  # "stdout", "stderr", "descriptor", "stream" or "file"
    path: str = ""
    descriptor: int = -1
    mode: int | None = None  # the replaced file's permissions, kept

    def same_file(self, other: OutputTarget) -> bool:
        if self.kind != "file" or other.kind != "file":
            return False
        # By where the names lead, not how they are spelt: neither may exist yet.
        if os.path.realpath(self.path) == os.path.realpath(other.path):
            return True
        try:
            return os.path.samefile(self.path, other.path)
        except OSError:
            return False

    def write(self, text: str, *, utf8: bool = False) -> None:
        """`utf8`: a document that is UTF-8 by definition (JSON, SARIF), whatever the terminal's
        encoding; text for people is written in the terminal's."""
        if self.kind == "stdout":
            write_stdout(text, "utf-8" if utf8 else None)
        elif self.kind == "stderr":
            sys.stderr.write(text)
            sys.stderr.flush()
        else:
            # Surrogates stand for the bytes of a file name that is not UTF-8: write those bytes.
            self.write_bytes(text.encode("utf-8", "surrogateescape"))

    def write_bytes(self, data: bytes) -> None:
        if self.kind in ("stdout", "stderr"):
            self.write(data.decode("utf-8", "surrogateescape"))
        elif self.kind == "descriptor":
            _write_descriptor(self.descriptor, self.named, data)
        elif self.kind == "stream":
            _stream(self.path, self.named, data)
        else:
            _replace(self.path, data, mode=self.mode)
            output_record.remember(self.path, data)


def write_output(path: str, text: str, *, force: bool = False) -> None:
    """Write `text` to `path` under the rules above; UsageError (exit 2) when refused."""
    output_target(path, force=force).write(text)


def output_target(path: str, *, force: bool = False) -> OutputTarget:
    """The checked target for `path`; UsageError (exit 2) when writing there is refused."""
    if path == STDOUT:
        return OutputTarget(path, "stdout")
    if not path:
        raise UsageError("an output file name is empty (use - for standard output)")
    named = _DESCRIPTOR_NAME.fullmatch(path)
    if named:
        descriptor = {"stdout": 1, "stderr": 2}[named["std"]] if named["std"] else int(named["fd"] or named["proc"])
        return _descriptor_target(path, descriptor)
    shown = path
    if path.endswith(("/", os.sep)):
        raise UsageError(f"cannot write {shown}: a name ending with {path[-1]} is a folder, not a file")
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
    if status is not None and stat.S_ISLNK(status.st_mode):
        try:
            status = os.stat(path)
        except FileNotFoundError:
            status = None  # a link to a file not there yet: created where the link points
        except OSError as error:
            raise UsageError(f"cannot write {shown}: {error.strerror or error}") from None
        if status is None or stat.S_ISREG(status.st_mode):
            path = os.path.realpath(path)
    if os.path.basename(path) == output_record.RECORD_NAME:
        raise UsageError(f"cannot write {shown}: it is verify-perf's record of the files it wrote in that folder")
    if status is None:
        return OutputTarget(shown, "file", path=path)
    mode = status.st_mode
    if stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {shown}: it is a directory")
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return OutputTarget(shown, "stream", path=path)
    if not stat.S_ISREG(mode):
        raise UsageError(f"cannot write {shown}: it is not a regular file, a terminal, a device or a FIFO")
    if not os.access(path, os.W_OK):
        # A rename in a writable folder could replace it anyway; `> FILE` in a shell could not.
        raise UsageError(f"cannot write {shown}: Permission denied (the file is not writable for this user)")
    if status.st_size and not force and not output_record.wrote(path):
        raise UsageError(
            f"refusing to replace {shown}: verify-perf did not write it (pass --force to replace it, "
            "or choose another file)"
        )
    return OutputTarget(shown, "file", path=path, mode=stat.S_IMODE(mode))


def _descriptor_target(named: str, descriptor: int) -> OutputTarget:
    if descriptor == 1:
        return OutputTarget(named, "stdout")
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError as error:
        raise UsageError(f"cannot write {named}: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"cannot write {named}: it is a directory")
    return OutputTarget(named, "descriptor", descriptor=descriptor)


def _write_descriptor(descriptor: int, named: str, data: bytes) -> None:
    """An inherited descriptor (`/dev/stderr`, `/dev/fd/3`): written at its own position."""
    if descriptor == 2:
        sys.stderr.flush()
    data = memoryview(data)
    try:
        while data:
            data = data[os.write(descriptor, data):]
    except OSError as error:
        raise UsageError(f"cannot write {named}: {error.strerror or error}") from None


def _replace(path: str, data: bytes, *, mode: int | None) -> None:
    """Write `data` to `path` through a temporary file and a rename."""
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
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                if mode is not None:
                    os.fchmod(stream.fileno(), mode)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def _stream(path: str, shown: str, data: bytes) -> None:
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
            stream.write(data)
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


def write_stdout(text: str, encoding: str | None = None) -> None:
    """Standard output, with undecodable file-name bytes written back as the bytes they were; in
    `encoding`, else the stream's (PYTHONIOENCODING=ascii made JSON hold `\\xe9`, which is no JSON)."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
        return
    encoding = encoding or stream.encoding or "utf-8"
    try:
        data = text.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:  # a terminal that cannot show some character (e.g. an ASCII locale)
        data = text.encode(encoding, "backslashreplace")
    stream.flush()
    buffer.write(data)
    buffer.flush()
