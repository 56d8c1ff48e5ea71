"""Which files are test code, by pytest's conventions: their lines run a few times on purpose."""

from __future__ import annotations

import os

_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def is_test_path(path: str) -> bool:
    """`tests/…`, `test_*.py`, `*_test.py`, `conftest.py`: pytest's conventions for test code."""
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        path = relative if not relative.startswith("..") else path
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    return (
        name == "conftest.py" or stem.startswith("test_") or stem.endswith("_test")
        or any(part in _TEST_FOLDERS for part in parts[:-1])
    )
