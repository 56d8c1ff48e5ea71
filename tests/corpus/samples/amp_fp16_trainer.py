"""FP16 mixed-precision training for a text classifier: the sequence the AMP docs recommend."""

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.cuda.amp import GradScaler
from torch.utils.data import DataLoader


@dataclass
class TrainConfig:
    epochs: int = 10
    lr: float = 3e-4
    max_grad_norm: float = 1.0
    log_every: int = 50
    batch_size: int = 64


def build_loader(dataset, cfg: TrainConfig) -> DataLoader:
    return DataLoader(
        dataset,
        batch_size=cfg.batch_size,
        shuffle=True,
        num_workers=4,
        pin_memory=True,
        persistent_workers=True,
        drop_last=True,
    )


def train(model: nn.Module, dataset, cfg: TrainConfig) -> nn.Module:
    device = torch.device("cuda")
    model = model.to(device)
    loader = build_loader(dataset, cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, fused=True)
    total_steps = cfg.epochs * len(loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=cfg.lr, total_steps=total_steps)
    scaler = GradScaler()  # expect: VP308[LOW]
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    global_step = 0

    for epoch in range(cfg.epochs):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for tokens, labels in loader:
            tokens = tokens.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                logits = model(tokens)
                loss = loss_fn(logits, labels)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            epoch_loss += loss.detach()
            global_step += 1
            if global_step % cfg.log_every == 0:
                lr = scheduler.get_last_lr()[0]
                print(f"step {global_step} loss {loss.item():.4f} grad-norm {grad_norm.item():.2f} lr {lr:.2e}")
        mean_loss = epoch_loss.item() / len(loader)
        print(f"epoch {epoch}: mean loss {mean_loss:.4f} perplexity {math.exp(mean_loss):.1f}")
    return model.cpu()
