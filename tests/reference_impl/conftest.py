"""Shared fixtures for the reference implementation tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """The tiny preset runs fastest, and most steadily on a shared machine, on one thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
