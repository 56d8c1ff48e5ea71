"""The synthetic task is learnable by construction and identical for every mode and rank."""

from __future__ import annotations

import torch

from verifier.reference_impl.data import IGNORE_INDEX, PeriodicCopyTask, SyntheticBatches, make_loader


def test_targets_repeat_the_block_and_ignore_the_unpredictable_prefix():
    task = PeriodicCopyTask(vocab_size=32, seq_len=32, period=8)
    inputs, targets = task.batch(4, torch.Generator().manual_seed(0))

    assert inputs.shape == targets.shape == (4, 32)
    assert (targets[:, :7] == IGNORE_INDEX).all()
    # Every scored target is the input token period - 1 positions back.
    assert torch.equal(targets[:, 7:], inputs[:, :25])
    assert torch.equal(inputs[:, 1:], torch.cat([inputs[:, 1:], targets[:, -1:]], dim=1)[:, :-1])


def test_a_batch_depends_only_on_seed_split_and_index():
    task = PeriodicCopyTask(32, 32, 8)
    first = SyntheticBatches(task, 8, 10, seed=0, split="train")
    again = SyntheticBatches(task, 8, 10, seed=0, split="train")
    held_out = SyntheticBatches(task, 8, 10, seed=0, split="eval")

    assert torch.equal(first[3][0], again[3][0])
    assert not torch.equal(first[3][0], first[4][0])
    assert not torch.equal(first[3][0], held_out[3][0])


def test_loader_shards_batches_across_ranks_and_pins_only_for_cuda():
    data = SyntheticBatches(PeriodicCopyTask(32, 32, 8), 4, 6, seed=0, split="train")
    rank0 = make_loader(data, torch.device("cpu"), num_workers=0, rank=0, world_size=2)
    rank1 = make_loader(data, torch.device("cpu"), num_workers=0, rank=1, world_size=2)

    assert list(rank0.sampler) == [0, 2, 4]
    assert list(rank1.sampler) == [1, 3, 5]
    assert rank0.pin_memory is False
    assert torch.equal(next(iter(rank1))[0], data[1][0])


def test_loader_keeps_workers_alive_between_passes():
    data = SyntheticBatches(PeriodicCopyTask(32, 32, 8), 4, 2, seed=0, split="train")
    loader = make_loader(data, torch.device("cpu"), num_workers=1)

    assert loader.num_workers == 1
    assert loader.persistent_workers is True
