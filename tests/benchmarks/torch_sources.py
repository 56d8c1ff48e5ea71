"""The installed torch sources the speed benchmarks measure on, and a 300-file part of them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# A part of torch of about 300 files, whose heat still crosses imports (optimizers, data, nn).
PART = (
    "torch/optim", "torch/utils/data", "torch/nn", "torch/amp", "torch/autograd", "torch/cuda",
    "torch/distributed/fsdp", "torch/distributed/optim",
)


def torch_root() -> Path:
    """The installed `torch` package's folder (the benchmark is skipped without torch)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    return Path(spec.origin).parent
