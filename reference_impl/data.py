"""A synthetic, learnable language-modelling task generated in code, and its DataLoader.

Each sequence repeats a random block of `period` tokens. The first `period - 1` next-token
targets are unpredictable (ignored); every later target is the block's token at that
position, so a causal transformer can learn it with one position-offset attention pattern.
With `noise`, each token after the first block is replaced, with that probability, by a
uniformly random one: those targets cannot be predicted, so no model exceeds
`ceiling_accuracy` (1 - noise + noise / vocab). A ceiling well below 1 keeps the accuracy
from saturating, which is what lets it tell precisions apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch.utils.data import DataLoader, Dataset

IGNORE_INDEX = -100
"""Target value for unpredictable positions; `cross_entropy(..., ignore_index=IGNORE_INDEX)`."""

_SPLIT_OFFSETS = {"train": 0, "eval": 1 << 31}


@dataclass(frozen=True)
class PeriodicCopyTask:
    vocab_size: int
    seq_len: int
    period: int
    noise: float = 0.0

    def __post_init__(self) -> None:
        if not 1 < self.period <= self.seq_len:
            raise ValueError(f"period must be in 2..seq_len, got {self.period}")
        if not 0.0 <= self.noise < 1.0:
            raise ValueError(f"noise must be in 0..1, got {self.noise}")

    @property
    def ceiling_accuracy(self) -> float:
        """The best expected accuracy of any model: a replaced token is a uniform guess."""
        return 1.0 - self.noise + self.noise / self.vocab_size

    def batch(self, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), both int64 of shape (size, seq_len)."""
        blocks = torch.randint(0, self.vocab_size, (size, self.period), generator=generator)
        repeats = (self.seq_len + 1) // self.period + 1
        sequences = blocks.repeat(1, repeats)[:, : self.seq_len + 1]
        if self.noise:
            # The first block stays clean: it is the reference the repeats are predicted from.
            replaced = torch.rand(sequences.shape, generator=generator) < self.noise
            replaced[:, : self.period] = False
            random_tokens = torch.randint(0, self.vocab_size, sequences.shape, generator=generator)
            sequences = torch.where(replaced, random_tokens, sequences)
        inputs = sequences[:, :-1].contiguous()
        targets = sequences[:, 1:].clone()
        targets[:, : self.period - 1] = IGNORE_INDEX
        return inputs, targets


class SyntheticBatches(Dataset):
    """Map-style dataset whose item `i` is a whole batch, a pure function of (seed, split, i).

    Whole batches avoid per-sample collation, and because a batch depends only on its index
    the data is identical for every precision mode, worker count and DDP rank layout.
    """

    def __init__(self, task: PeriodicCopyTask, batch_size: int, num_batches: int, seed: int, split: str) -> None:
        self.task = task
        self.batch_size = batch_size
        self.num_batches = num_batches
        self.base_seed = seed * 1_000_003 + _SPLIT_OFFSETS[split]

    def __len__(self) -> int:
        return self.num_batches

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        # CPU generators keep only the low 32 bits of a seed; fold it in explicitly.
        generator = torch.Generator().manual_seed((self.base_seed + index) % (1 << 32))
        return self.task.batch(self.batch_size, generator)


def make_loader(
    dataset: SyntheticBatches,
    device: torch.device,
    num_workers: int,
    rank: int = 0,
    world_size: int = 1,
) -> DataLoader:
    """Workers generate batches off the training thread; pinned host memory lets the
    `non_blocking=True` copies overlap with compute on CUDA. Each DDP rank takes every
    `world_size`-th batch."""
    return DataLoader(
        dataset,
        batch_size=None,
        sampler=range(rank, len(dataset), world_size),
        num_workers=num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=num_workers > 0,
    )


def endless(loader: DataLoader) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Cycle through the loader; persistent workers survive from one pass to the next."""
    while True:
        yield from loader
