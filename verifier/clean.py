"""`verify-perf clean`: remove the results caches, as `ruff clean` does, and nothing else.

Only a folder verify-perf marked as its cache (its `CACHEDIR.TAG`, written only into a folder
that was new or empty) is touched, and even there only what the cache's layout names is removed,
one entry at a time (`cache_layout`): a user's file that ended up inside stays, and so does the
folder, with a message saying so. Symbolic links are never followed: every folder is opened
relative to its parent without following links, and a link found inside is left in place.
"""

from __future__ import annotations

import os
import stat
import sys

from verifier.errors import EXIT_ERROR, EXIT_PASS
from verifier.static import cache_layout
from verifier.static.cache import DEFAULT_CACHE_DIR
from verifier.static.discovery import DEFAULT_EXCLUDES, display_path

_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0) | _NO_FOLLOW | getattr(os, "O_CLOEXEC", 0)


def cache_folders(start: str) -> list[str]:
    """`.verify_perf_cache` folders in `start` and below (other excluded folders are skipped)."""
    found = []
    skipped = set(DEFAULT_EXCLUDES) - {DEFAULT_CACHE_DIR}
    for folder, dirnames, _ in os.walk(start, followlinks=False):
        if DEFAULT_CACHE_DIR in dirnames:
            found.append(os.path.join(folder, DEFAULT_CACHE_DIR))
        dirnames[:] = sorted(d for d in dirnames if d not in skipped and d != DEFAULT_CACHE_DIR)
    return sorted(found)


def run_clean(cache_dir: str | None) -> int:
    """Remove `cache_dir` (or every default cache folder under the working directory)."""
    targets = [cache_dir] if cache_dir else cache_folders(os.curdir)
    status = EXIT_PASS
    for folder in targets:
        named = cache_layout.as_named(folder)
        if os.path.lexists(named) and not _clean_one(named, display_path(os.path.normpath(folder))):
            status = EXIT_ERROR
    return status


def _clean_one(folder: str, shown: str) -> bool:
    """False (after one line on stderr) when `folder` is not a cache or cannot be cleaned."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            print(f"verify-perf: error: not removing {shown}: it is not a verify-perf cache "
                  "(a symbolic link or not a folder)", file=sys.stderr)
            return False
        root = os.open(folder, _DIRECTORY)
    except OSError as error:
        print(f"verify-perf: error: cannot remove {shown}: {error.strerror or error}", file=sys.stderr)
        return False
    try:
        if not cache_layout.is_marked(root):
            print(f"verify-perf: error: not removing {shown}: it is not a verify-perf cache "
                  f"(no {cache_layout.TAG_NAME} of ours)", file=sys.stderr)
            return False
        print(f"Removing cache at: {shown}", file=sys.stderr)
        left = _remove_layout(root, 0)
    except OSError as error:
        print(f"verify-perf: error: cannot remove {shown}: {error.strerror or error}", file=sys.stderr)
        return False
    finally:
        os.close(root)
    if left:
        names = ", ".join(left[:3]) + (", ..." if len(left) > 3 else "")
        print(f"verify-perf: warning: left {shown} in place: it holds files verify-perf did not put "
              f"there ({names})", file=sys.stderr)
        return True
    try:
        os.rmdir(folder)
    except OSError as error:
        print(f"verify-perf: error: cannot remove {shown}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


def _remove_layout(folder: int, depth: int) -> list[str]:
    """Remove the cache's own files and folders under `folder` (`depth` levels below the root);
    returns what was left, as paths relative to `folder`. The tag goes last."""
    left: list[str] = []
    for name in sorted(os.listdir(folder)):
        if depth == 0 and name in cache_layout.ROOT_FILES:
            continue
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        except FileNotFoundError:
            continue
        levels = cache_layout.FOLDER_LEVELS
        if stat.S_ISDIR(mode) and depth < len(levels) and levels[depth].fullmatch(name):
            inner = os.open(name, _DIRECTORY, dir_fd=folder)
            try:
                below = _remove_layout(inner, depth + 1)
            finally:
                os.close(inner)
            if below:
                left.extend(f"{name}/{path}" for path in below)
            else:
                os.rmdir(name, dir_fd=folder)
        elif stat.S_ISREG(mode) and _is_own_file(name, depth):
            os.unlink(name, dir_fd=folder)
        else:
            left.append(name)
    if depth == 0:
        for name in (cache_layout.IGNORE_NAME, cache_layout.TAG_NAME):
            if cache_layout.holds_root_file(folder, name):
                os.unlink(name, dir_fd=folder)
            elif _exists(folder, name):
                left.append(name)
    return left


def _is_own_file(name: str, depth: int) -> bool:
    if depth == len(cache_layout.FOLDER_LEVELS):
        return cache_layout.is_entry_file(name)
    temporary = cache_layout.TEMPORARY_NAME.fullmatch(name)
    return depth == 0 and bool(temporary) and temporary.group("name") in cache_layout.ROOT_FILES


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
