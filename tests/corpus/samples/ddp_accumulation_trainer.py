"""A GPT-style pretraining script on several GPUs: DDP, gradient accumulation, bf16 autocast."""

import contextlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return local_rank, dist.get_world_size()


def pretrain(build_model, next_batch, max_steps, accum_steps=8, log_every=50):
    local_rank, world_size = setup()
    device = f"cuda:{local_rank}"
    model = DDP(build_model().to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    for step in range(max_steps):
        step_loss = torch.zeros((), device=device)
        for micro_step in range(accum_steps):
            x, y = next_batch()
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x, y) / accum_steps
            step_loss += loss.detach()
            loss.backward()  # expect: VP602[MEDIUM]
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        dist.all_reduce(step_loss, op=dist.ReduceOp.AVG)  # expect: VP601[MEDIUM]
        if local_rank == 0:
            print(f"step {step}: loss {step_loss.item():.4f}")  # expect: VP201[MEDIUM]
        dist.barrier()  # expect: VP603[MEDIUM]
        if step % log_every == 0:
            ranks_seen = torch.ones((), device=device)
            dist.all_reduce(ranks_seen)
            print(f"step {step}: {int(ranks_seen.item())} of {world_size} ranks alive")
    dist.barrier()
    if local_rank == 0:
        torch.save(model.module.state_dict(), "final.pt")
    dist.destroy_process_group()


def finetune(build_model, next_batch, max_steps, accum_steps=4):
    """The same loop with the correct forms: no gradient sync before the last micro-batch, the
    loss kept per rank on the device, ranks aligned once at the end."""
    local_rank, world_size = setup()
    device = f"cuda:{local_rank}"
    model = DDP(build_model().to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    running = torch.zeros((), device=device)
    for step in range(max_steps):
        for micro_step in range(accum_steps):
            x, y = next_batch()
            last = micro_step == accum_steps - 1
            with contextlib.nullcontext() if last else model.no_sync():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x.to(device, non_blocking=True), y.to(device, non_blocking=True)) / accum_steps
                loss.backward()
            running += loss.detach()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.all_reduce(running)
    dist.barrier()
    return running.item() / (max_steps * world_size)
