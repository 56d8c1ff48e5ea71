"""Shared by the torch micro-benchmarks (not the analyzer-speed benchmark, which never runs torch)."""

from __future__ import annotations

import pytest


@pytest.fixture
def one_thread():
    """One CPU thread: steadier timings on a shared machine, and the same setting every run."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
