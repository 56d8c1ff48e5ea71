"""`verify-perf clean`: remove the results caches, as `ruff clean` does.

Only a folder that verify-perf itself marked as its cache (its `CACHEDIR.TAG`) is removed: a
mistyped `--cache-dir ~` must never delete a home folder. Symbolic links are never followed.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys

from verifier.errors import EXIT_ERROR, EXIT_PASS
from verifier.static.cache import DEFAULT_CACHE_DIR
from verifier.static.discovery import DEFAULT_EXCLUDES, display_path

_TAG = "CACHEDIR.TAG"
_OWNER = "created by verify-perf"


def cache_folders(start: str) -> list[str]:
    """`.verify_perf_cache` folders in `start` and below (other excluded folders are skipped)."""
    found = []
    skipped = set(DEFAULT_EXCLUDES) - {DEFAULT_CACHE_DIR}
    for folder, dirnames, _ in os.walk(start, followlinks=False):
        if DEFAULT_CACHE_DIR in dirnames:
            found.append(os.path.join(folder, DEFAULT_CACHE_DIR))
        dirnames[:] = sorted(d for d in dirnames if d not in skipped and d != DEFAULT_CACHE_DIR)
    return sorted(found)


def is_our_cache(folder: str) -> bool:
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        with open(os.path.join(folder, _TAG), encoding="utf-8", errors="replace") as handle:
            return _OWNER in handle.read(4096)
    except OSError:
        return False


def run_clean(cache_dir: str | None) -> int:
    """Remove `cache_dir` (or every default cache folder under the working directory)."""
    targets = [cache_dir] if cache_dir else cache_folders(os.curdir)
    status = EXIT_PASS
    for folder in targets:
        shown = display_path(os.path.normpath(folder))
        if not os.path.lexists(folder):
            continue
        if not is_our_cache(folder):
            print(f"verify-perf: error: not removing {shown}: it is not a verify-perf cache (no {_TAG} of ours)",
                  file=sys.stderr)
            status = EXIT_ERROR
            continue
        print(f"Removing cache at: {shown}", file=sys.stderr)
        try:
            shutil.rmtree(folder)
        except OSError as error:
            print(f"verify-perf: error: cannot remove {shown}: {error.strerror or error}", file=sys.stderr)
            status = EXIT_ERROR
    return status
