"""Fixtures for the harness tests: importable entry-point modules and quiet, fast runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def entry_fixtures(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make tests/dynamic/fixtures importable, as a user's project root would be."""
    monkeypatch.syspath_prepend(str(FIXTURES))
    return FIXTURES


@pytest.fixture
def one_thread():
    """Small CPU workloads run fastest, and most steadily on a shared machine, on one thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
