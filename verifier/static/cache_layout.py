"""What a results-cache folder holds, by name: how a run recognises the folder as its own and
what `verify-perf clean` may remove from it.

A folder is a cache when it holds verify-perf's `CACHEDIR.TAG` (exactly its text, in a regular
file). The tag is written only into a folder that holds nothing else, so a mistyped `--cache-dir`
naming a home or project folder is refused instead of being claimed. Below the root, the layout
is fixed: `<tool fingerprint>/<settings digest>/<shard>/<entry>.json`; anything else found there
belongs to someone else.
"""

from __future__ import annotations

import os
import re
import secrets
import stat

TAG_NAME = "CACHEDIR.TAG"
TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by verify-perf.\n"
)
IGNORE_NAME = ".gitignore"
IGNORE_TEXT = "# Automatically created by verify-perf.\n*\n"
# The root's own files, each with the only text verify-perf writes into it.
ROOT_FILES = {TAG_NAME: TAG_TEXT, IGNORE_NAME: IGNORE_TEXT}

# Folder names level by level below the root: tool fingerprint, settings digest, shard (a key's
# first two characters: hex digits, "ru" for the whole-run keys, "la" for the last run's records;
# a file's configuration defaults are under "de").
FOLDER_LEVELS = (re.compile(r"[0-9a-f]{24}"), re.compile(r"[0-9a-f]{24}"), re.compile(r"[0-9a-f]{2}|ru|la"))
ENTRY_NAME = re.compile(r"(?:(?:run|last|defaults)-[0-9a-f]{64}|[0-9a-f]{64}(?:-[0-9a-f]{16})?)\.json")
# A write in progress (or interrupted): `.<name>.<12 hex digits>.tmp`.
TEMPORARY_NAME = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{12}\.tmp")

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_MAX_ROOT_FILE = 4096


def as_named(root: str) -> str:
    """`root` without trailing separators: `link/` would resolve the link, `link` names the link itself."""
    stripped = root.rstrip(os.sep + (os.altsep or ""))
    return stripped or root


def temporary_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(6)}.tmp"


def is_entry_file(name: str) -> bool:
    temporary = TEMPORARY_NAME.fullmatch(name)
    return bool(ENTRY_NAME.fullmatch(temporary.group("name") if temporary else name))


def holds_root_file(root: int, name: str) -> bool:
    """True when `name` in the folder is a regular file with exactly verify-perf's text."""
    try:
        descriptor = os.open(name, os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=root)
    except OSError:
        return False
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_ROOT_FILE:
            return False
        return os.read(descriptor, _MAX_ROOT_FILE + 1) == ROOT_FILES[name].encode()
    except OSError:
        return False
    finally:
        os.close(descriptor)


def is_marked(root: int) -> bool:
    return holds_root_file(root, TAG_NAME)


def is_unclaimed(root: int) -> bool:
    """True when the folder holds nothing but what marking it writes (another run may be marking
    it at the same moment): it is empty as far as anyone else is concerned."""
    for name in os.listdir(root):
        temporary = TEMPORARY_NAME.fullmatch(name)
        if temporary and temporary.group("name") in ROOT_FILES:
            continue
        if name in ROOT_FILES and holds_root_file(root, name):
            continue
        return False
    return True


def mark(root: int) -> None:
    """Write the root's files, the tag last: a folder with the tag is a complete cache root.

    Each file is written whole under a temporary name and renamed: a run that starts at the
    same moment sees either no tag or the whole tag, and both runs write the same bytes."""
    for name in (IGNORE_NAME, TAG_NAME):
        if holds_root_file(root, name):
            continue
        temporary = temporary_name(name)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_FOLLOW, 0o666, dir_fd=root)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(ROOT_FILES[name])
            os.replace(temporary, name, src_dir_fd=root, dst_dir_fd=root)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=root)
            except OSError:
                pass
            raise
