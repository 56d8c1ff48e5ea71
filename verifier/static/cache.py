"""A results cache keyed by file content, tool build and effective settings (like ruff's).

Layout: `<cache dir>/<tool fingerprint>/<settings digest>/<key[:2]>/<key>.pickle`, written
atomically. A whole-run entry keyed by every file's key lets an unchanged tree skip even
the per-file loads: a warm re-run only reads and hashes the files.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import asdict
from functools import cache
from pathlib import Path

import verifier
from verifier.config import Settings

DEFAULT_CACHE_DIR = ".verify_perf_cache"


@cache
def tool_fingerprint() -> str:
    """The version plus a digest of the installed package's files, so edited rules never hit stale entries."""
    roots = [Path(verifier.__file__).parent]
    try:
        from verifier import rules

        roots.append(Path(rules.__file__).parent)
    except ImportError:
        pass
    digest = hashlib.sha256(verifier.__version__.encode())
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{verifier.__version__}-{digest.hexdigest()[:16]}"


def settings_digest(settings: Settings, rule_codes: list[str]) -> str:
    data = {k: v for k, v in asdict(settings).items() if k not in ("jobs", "cache_dir", "file_timeout")}
    return hashlib.sha256(repr((sorted(data.items(), key=str), rule_codes)).encode()).hexdigest()[:16]


def file_key(path: str, data: bytes) -> str:
    return hashlib.sha256(os.fsencode(path) + b"\0" + data).hexdigest()


class ResultCache:
    def __init__(self, root: str, settings: Settings, rule_codes: list[str]) -> None:
        self.folder = Path(root) / tool_fingerprint() / settings_digest(settings, rule_codes)
        self._root = Path(root)

    def key_for(self, path: str) -> str | None:
        try:
            with open(path, "rb") as handle:
                return file_key(path, handle.read())
        except OSError:
            return None

    def load(self, key: str):
        try:
            with open(self._path(key), "rb") as handle:
                value = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            return None
        return value

    def store(self, key: str, value) -> None:
        """Best effort: a cache that cannot be written must never fail the run."""
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._mark_root()
            handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, target)
        except OSError:
            pass

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.pickle"

    def _mark_root(self) -> None:
        # Like ruff's cache: ignored by git and by backup tools without anyone editing .gitignore.
        ignore = self._root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by verify-perf.\n*\n")
            (self._root / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by verify-perf.\n"
            )


def run_key(file_keys: list[str | None]) -> str | None:
    """One key for a whole run: every file's key in order; None if any file was unreadable."""
    if any(key is None for key in file_keys):
        return None
    return hashlib.sha256("\n".join(file_keys).encode()).hexdigest()
