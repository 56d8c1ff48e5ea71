"""What VP105 and VP406 cost on the machine that runs this, so the rules' docs can cite it.

VP105: counting a DataLoader by iterating it (`len(list(loader))`) against `len(loader)`, on a
small synthetic image dataset with a light per-sample transform and no workers: the extra pass
is pure loading and collation. VP406: growing a tensor with `torch.cat` onto itself against a
list joined once and against writes into a preallocated tensor, for 256 and 1024 iterations.
CPU only: both costs are host-side memory traffic and Python work, present with or without an
accelerator (on a GPU the quadratic copies become kernels and allocations instead).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

SAMPLES, BATCH = 4096, 64
ROW = 256


class SmallImages(Dataset):
    """Images held in memory, normalised per sample as a transform would."""

    def __init__(self) -> None:
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(SAMPLES, 3, 32, 32, generator=generator)
        self.labels = torch.randint(0, 10, (SAMPLES,), generator=generator)

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        image = self.images[index]
        return (image - 0.5) / 0.25, self.labels[index]


@pytest.fixture(scope="module")
def loader():
    return DataLoader(SmallImages(), batch_size=BATCH, shuffle=True, num_workers=0)


@pytest.mark.benchmark(group="VP105-count-loader")
def test_count_by_iterating_the_loader(benchmark, loader):
    assert benchmark(lambda: len(list(loader))) == SAMPLES // BATCH


@pytest.mark.benchmark(group="VP105-count-loader")
def test_count_with_len(benchmark, loader):
    assert benchmark(lambda: len(loader)) == SAMPLES // BATCH


@pytest.fixture(scope="module")
def rows():
    generator = torch.Generator().manual_seed(0)
    return torch.randn(1024, 1, ROW, generator=generator)


def grow_by_cat(rows: torch.Tensor, steps: int) -> torch.Tensor:
    grown = torch.empty(0, ROW)
    for step in range(steps):
        grown = torch.cat([grown, rows[step]])
    return grown


def collect_then_cat(rows: torch.Tensor, steps: int) -> torch.Tensor:
    pieces = []
    for step in range(steps):
        pieces.append(rows[step])
    return torch.cat(pieces)


def write_preallocated(rows: torch.Tensor, steps: int) -> torch.Tensor:
    out = torch.empty(steps, ROW)
    for step in range(steps):
        out[step : step + 1] = rows[step]
    return out


@pytest.mark.parametrize("steps", [256, 1024])
@pytest.mark.parametrize("grow", [grow_by_cat, collect_then_cat, write_preallocated], ids=lambda f: f.__name__)
@pytest.mark.benchmark(group="VP406-growth")
def test_growing_a_tensor(benchmark, rows, grow, steps):
    result = benchmark(grow, rows, steps)
    assert result.shape == (steps, ROW)
    assert torch.equal(result, rows[:steps].reshape(steps, ROW))
