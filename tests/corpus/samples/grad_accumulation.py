"""Gradient accumulation for a language-model fine-tune with FP16 autocast and a GradScaler."""

import torch
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_


def train(model, loader, optimizer, scheduler, accum_steps=8, max_norm=1.0, device="cuda"):
    scaler = torch.amp.GradScaler("cuda")
    model.train()
    optimizer.zero_grad(set_to_none=True)
    tokens_seen = 0
    window_loss = torch.zeros((), device=device)
    for i, batch in enumerate(loader):
        input_ids = batch["input_ids"].to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(input_ids, labels=input_ids).loss / accum_steps
        scaler.scale(loss).backward()
        window_loss += loss.detach()
        tokens_seen += input_ids.numel()
        if (i + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
    return window_loss.item() * accum_steps / max(1, len(loader)), tokens_seen


def train_micro_batches(model, loader, optimizer, micro_batch=4, device="cuda"):
    """Splits each batch into micro-batches and sums their losses into one backward."""
    scaler = torch.amp.GradScaler("cuda")
    for step, (x, y) in enumerate(loader):
        total = torch.zeros((), device=device)
        for xs, ys in zip(x.split(micro_batch), y.split(micro_batch)):
            with torch.autocast("cuda", dtype=torch.float16):
                out = model(xs.to(device, non_blocking=True))
                total = total + F.cross_entropy(out, ys.to(device, non_blocking=True), reduction="sum")
        scaler.scale(total / x.size(0)).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)


def train_skip_nonfinite(model, loader, optimizer, device="cuda"):
    scaler = torch.amp.GradScaler("cuda")
    skipped = 0
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x.to(device, non_blocking=True)), y.to(device, non_blocking=True))
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = clip_grad_norm_(model.parameters(), 1.0)
        if not torch.isfinite(grad_norm):  # expect: VP305[LOW]
            skipped += 1
            optimizer.zero_grad(set_to_none=False)  # expect: VP405[LOW]
            scaler.update()
            continue
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=False)  # expect: VP405[LOW]
    return skipped
