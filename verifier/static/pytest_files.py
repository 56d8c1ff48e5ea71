"""Which files are test code, by pytest's conventions: their lines run a few times on purpose."""

from __future__ import annotations

import os
import re

_TEST_FOLDERS = frozenset({"tests", "test", "testing"})
# What pytest or unittest would collect or run: test functions and classes, the frameworks' imports.
_TEST_MARKERS = re.compile(
    r"^[ \t]*(?:def test|async def test|class Test|import pytest|from pytest|import unittest|from unittest)", re.M
)
_SCRIPT_ENTRY = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)


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


def is_test_code(path: str, text: str) -> bool:
    """Test code by its path (`is_test_path`), unless a file only named like a test is a script:
    `mnist_test.py` with a `__main__` entry and nothing pytest or unittest would run is a
    training or evaluation script (TCN's `*_test.py` training scripts)."""
    if not is_test_path(path):
        return False
    parts = path.replace("\\", "/").split("/")
    if parts[-1] == "conftest.py" or any(part in _TEST_FOLDERS for part in parts[:-1]):
        return True
    return bool(_TEST_MARKERS.search(text)) or not _SCRIPT_ENTRY.search(text)
