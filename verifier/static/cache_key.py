"""The secret that signs results-cache entries, kept in the user's own cache directory.

A cache folder can arrive from anywhere (committed in a pull request, restored from a CI cache):
an entry is trusted only when it carries an HMAC made with this key, which lives outside every
project (`$XDG_CACHE_HOME/verify-perf/key`, `~/Library/Caches/verify-perf/key` on macOS,
`%LOCALAPPDATA%\\verify-perf\\key` on Windows; `$VERIFY_PERF_CACHE_KEY_FILE` names another file).
It is 32 random bytes, created on first use with mode 0600 and put in place with a hard link, so
two runs starting together end up with the same key and nobody ever reads half of one.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys

KEY_FILE_VARIABLE = "VERIFY_PERF_CACHE_KEY_FILE"
KEY_SIZE = 32
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


class KeyUnavailable(Exception):
    """No key can be read or created safely; the run goes on without a cache."""


def user_cache_home() -> str:
    """The user's cache directory, as platformdirs would name it."""
    if sys.platform == "win32":
        home = os.environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
    elif sys.platform == "darwin":
        home = os.path.expanduser("~/Library/Caches")
    else:
        configured = os.environ.get("XDG_CACHE_HOME", "")
        # The XDG specification ignores a relative path.
        home = configured if os.path.isabs(configured) else os.path.expanduser("~/.cache")
    if not os.path.isabs(home):
        raise KeyUnavailable("there is no home directory to keep the cache key in")
    return home


def key_path() -> str:
    configured = os.environ.get(KEY_FILE_VARIABLE)
    if configured:
        return os.path.abspath(configured)
    return os.path.join(user_cache_home(), "verify-perf", "key")


def signing_key() -> bytes:
    """The key, created on first use; KeyUnavailable with the reason when it cannot be trusted."""
    path = key_path()
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        _create_key(path)
        return _read_key(path)
    except KeyUnavailable:
        raise
    except OSError as error:
        raise KeyUnavailable(f"cannot create the cache key {path} ({error.strerror or error})") from None


def _create_key(path: str) -> None:
    temporary = f"{path}.{secrets.token_hex(6)}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(secrets.token_bytes(KEY_SIZE))
        try:
            os.link(temporary, path)  # never replaces: a key another run made first is kept
        except FileExistsError:
            pass
    finally:
        os.unlink(temporary)


def _read_key(path: str) -> bytes:
    try:
        descriptor = os.open(path, os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as error:
        raise KeyUnavailable(f"cannot read the cache key {path} ({error.strerror or error})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size != KEY_SIZE:
            raise KeyUnavailable(f"the cache key {path} is not a {KEY_SIZE}-byte file (remove it to make a new one)")
        if hasattr(os, "getuid") and (status.st_uid != os.getuid() or status.st_mode & 0o077):
            raise KeyUnavailable(
                f"the cache key {path} is not private to this user (it must be yours, mode 600; "
                "remove it to make a new one)"
            )
        return os.read(descriptor, KEY_SIZE + 1)
    finally:
        os.close(descriptor)
