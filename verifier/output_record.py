"""The record of the files verify-perf wrote, so that it replaces only those, and only unchanged.

Text and GitHub output cannot carry a marker without changing what their readers parse, and a
marker inside a file says nothing about whether someone edited it since. So every folder verify-perf
writes a report or `-o` file into gets a small `.verify-perf-outputs` file: JSON naming each file
it wrote there with the SHA-256 of the bytes it wrote. A file may be replaced when it is listed
with the digest of what it holds now; a file edited since, or never listed, belongs to the user.
A record that is not exactly this format (a user's file of that name, a link) is never read as
one and never replaced; the files it would list are then refused without `--force`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat

RECORD_NAME = ".verify-perf-outputs"
_KIND = {"record": "files written by verify-perf", "version": 1}
_ABOUT = (
    "Files verify-perf wrote in this folder, with the SHA-256 of what it wrote: it replaces one "
    "of them only while the file still holds exactly that."
)
_DIGEST = re.compile(r"[0-9a-f]{64}")
_MAX_RECORD_SIZE = 1024 * 1024
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class _Foreign(Exception):
    """A file named like the record that verify-perf did not write."""


def _digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wrote(path: str) -> bool:
    """True when `path` (a regular file, links resolved) holds exactly what verify-perf last wrote there."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        expected = _read(folder).get(name)
    except (_Foreign, OSError):
        return False
    return expected is not None and expected == _file_digest(path)


def remember(path: str, data: bytes) -> None:
    """Record that verify-perf wrote `data` to `path`. Best effort: a record that cannot be
    written only means the next run asks for --force before replacing the file."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        files = _read(folder)
    except (_Foreign, OSError):
        return
    files = {kept: digest for kept, digest in files.items() if kept != name and _is_file(os.path.join(folder, kept))}
    files[name] = _digest_of(data)
    text = json.dumps({**_KIND, "about": _ABOUT, "files": dict(sorted(files.items()))}, indent=1) + "\n"
    temporary = os.path.join(folder, f".{RECORD_NAME}.{secrets.token_hex(6)}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o666)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, os.path.join(folder, RECORD_NAME))
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        pass


def _read(folder: str) -> dict[str, str]:
    """The record's files and digests; {} when there is none; _Foreign when the file is not one."""
    try:
        descriptor = os.open(os.path.join(folder, RECORD_NAME), os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise _Foreign(str(error)) from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_RECORD_SIZE:
            raise _Foreign("not a record")
        data = b""
        while len(data) <= _MAX_RECORD_SIZE and (block := os.read(descriptor, _MAX_RECORD_SIZE + 1 - len(data))):
            data += block
    finally:
        os.close(descriptor)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise _Foreign("not JSON") from None
    ours = isinstance(document, dict) and all(document.get(key) == value for key, value in _KIND.items())
    files = document.get("files") if ours else None
    if not isinstance(files, dict) or not all(
        "/" not in name and isinstance(digest, str) and _DIGEST.fullmatch(digest) for name, digest in files.items()
    ):
        raise _Foreign("not a record")
    return files


def _file_digest(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
