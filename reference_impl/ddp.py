"""DistributedDataParallel set-up from the environment `torchrun` provides: NCCL on CUDA,
gloo on CPU, one process per device."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


@dataclass(frozen=True)
class DistributedContext:
    rank: int
    local_rank: int
    world_size: int
    backend: str
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launched_by_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ


def init_distributed(use_cuda: bool) -> DistributedContext:
    """Join the process group described by torchrun's environment variables."""
    local_rank = int(os.environ["LOCAL_RANK"])
    if use_cuda:
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend=backend)
    return DistributedContext(
        rank=dist.get_rank(),
        local_rank=local_rank,
        world_size=dist.get_world_size(),
        backend=backend,
        device=device,
    )


def wrap_model(model: nn.Module, context: DistributedContext) -> nn.Module:
    device_ids = [context.device.index] if context.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids)


def mean_across_ranks(values: list[float], context: DistributedContext) -> list[float]:
    """Average host-side figures over ranks (one collective, after training has ended)."""
    summed = torch.tensor(values, dtype=torch.float64, device=context.device)
    dist.all_reduce(summed)
    return [total / context.world_size for total in summed.tolist()]


def shutdown() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
