"""A small in-house Trainer: the loop, a step method and hooks, all in one class."""

import time

import torch
from torch import nn


class RunningAccuracy:
    """Top-1 accuracy accumulated over an epoch."""

    def __init__(self):
        self.correct = 0
        self.seen = 0

    def update(self, logits, targets):
        self.correct += (logits.argmax(-1) == targets).sum().item()  # expect: VP201[MEDIUM]
        self.seen += targets.numel()

    def compute(self):
        return self.correct / max(1, self.seen)


class Trainer:
    def __init__(self, model, optimizer, loss_fn, device="cuda", grad_clip=1.0):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.device = device
        self.grad_clip = grad_clip
        self.scaler = torch.amp.GradScaler("cuda")
        self.ema_loss = None
        self.skipped_steps = 0
        self.step_times = []
        self.accuracy = RunningAccuracy()

    def _training_step(self, batch):
        inputs, targets = (part.to(self.device, non_blocking=True) for part in batch)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = self.model(inputs)
            loss = self.loss_fn(logits, targets)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        self.accuracy.update(logits.detach(), targets)
        return {"loss": loss.item(), "grad_norm": grad_norm}  # expect: VP201[MEDIUM]

    def _on_step_end(self, metrics, started):
        self.step_times.append(time.perf_counter() - started)  # expect: VP402[LOW]
        value = float(metrics["loss"])
        self.ema_loss = value if self.ema_loss is None else 0.98 * self.ema_loss + 0.02 * value
        if not torch.isfinite(metrics["grad_norm"]):  # expect: VP201[MEDIUM]
            self.skipped_steps += 1

    def _on_epoch_end(self, epoch):
        median_ms = 1e3 * sorted(self.step_times)[len(self.step_times) // 2]
        print(f"epoch {epoch}: ema loss {self.ema_loss:.4f}, accuracy {self.accuracy.compute():.3f}, median step {median_ms:.1f} ms")
        self.accuracy = RunningAccuracy()
        torch.cuda.empty_cache()  # expect: VP403[LOW]

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            for batch in loader:
                started = time.perf_counter()
                metrics = self._training_step(batch)
                self._on_step_end(metrics, started)
            self._on_epoch_end(epoch)
        return self.model
