"""The training step, the loop and the evaluation, written the way RULES.md recommends.

The step never reads a value back to the host: the loss comes back as a detached device
tensor, the loop sums it on the device, and the sums are read once after the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from verifier.reference_impl.data import IGNORE_INDEX

# "tf32" is FP32 without autocast, run with TF32 tensor-core matmuls allowed (the harness sets that).
AUTOCAST_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Precision:
    """A precision mode on a device type: which autocast dtype, and whether a GradScaler works.

    fp32 runs with autocast disabled. bf16 has FP32's exponent range, so it needs no loss
    scaling. fp16 does: its GradScaler is enabled only in that mode; a disabled scaler
    passes the loss and `optimizer.step()` through unchanged, so one step function serves
    all three modes.
    """

    mode: str
    device_type: str

    def __post_init__(self) -> None:
        if self.mode not in AUTOCAST_DTYPES:
            raise ValueError(f"unknown mode {self.mode!r} (expected one of {', '.join(AUTOCAST_DTYPES)})")

    @property
    def dtype(self) -> torch.dtype:
        return AUTOCAST_DTYPES[self.mode]

    @property
    def uses_grad_scaler(self) -> bool:
        return self.mode == "fp16"

    def autocast(self) -> torch.autocast:
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.mode in ("fp16", "bf16"))

    def grad_scaler(self) -> torch.amp.GradScaler:
        return torch.amp.GradScaler(self.device_type, enabled=self.uses_grad_scaler)


def make_optimizer(model: nn.Module, learning_rate: float, weight_decay: float) -> torch.optim.Optimizer:
    """AdamW with the fused kernel where the device supports it: one launch per step, and
    the GradScaler's inf check stays on the device instead of costing a host sync."""
    params = [p for p in model.parameters() if p.requires_grad]
    try:
        return torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay, fused=True)
    except (RuntimeError, ValueError):
        return torch.optim.AdamW(params, lr=learning_rate, weight_decay=weight_decay, foreach=True)


def language_model_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    precision: Precision,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    max_grad_norm: float | None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = language_model_loss,
) -> torch.Tensor:
    """One optimisation step; returns the detached loss, still on the device.

    `max_grad_norm=None` skips clipping (and the unscale it needs).
    """
    return optimisation_step(model, optimizer, scaler, precision, lambda: loss_fn(model(inputs), targets), max_grad_norm)


def optimisation_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    precision: Precision,
    compute_loss: Callable[[], torch.Tensor],
    max_grad_norm: float | None,
) -> torch.Tensor:
    """The step around a loss however it is computed (`compute_loss()`, e.g. a model that returns
    its own loss): autocast, scaled backward, unscale and clip, scaler step and update."""
    # Autocast covers forward and loss only; backward runs in the dtypes the forward chose.
    with precision.autocast():
        loss = compute_loss()
    scaler.scale(loss).backward()
    if max_grad_norm is not None:
        # Clip the true gradients: unscale first; the scaler remembers not to unscale again.
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    # scaler.step skips the update when the gradients hold inf/NaN; no explicit check needed.
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


@dataclass(frozen=True)
class Evaluation:
    loss: float
    accuracy: float
    tokens: int


def evaluate(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    precision: Precision,
    device: torch.device,
) -> Evaluation:
    """Mean loss and next-token accuracy over the predictable positions, in `precision`."""
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        totals = torch.zeros(3, device=device, dtype=torch.float64)
        for inputs, targets in batches:
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with precision.autocast():
                logits = model(inputs)
            scored = targets != IGNORE_INDEX
            summed_loss = F.cross_entropy(
                logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX, reduction="sum"
            )
            correct = ((logits.argmax(dim=-1) == targets) & scored).sum()
            totals += torch.stack([summed_loss.double(), correct.double(), scored.sum().double()])
        loss_sum, correct_sum, scored_sum = totals.tolist()
    model.train(was_training)
    if scored_sum == 0:
        raise ValueError("evaluation saw no scored tokens")
    return Evaluation(loss=loss_sum / scored_sum, accuracy=correct_sum / scored_sum, tokens=int(scored_sum))


def train(
    step_fn: Callable[[], torch.Tensor],
    steps: int,
    log_interval: int,
    device: torch.device,
) -> list[float]:
    """Run `steps` steps; return the mean training loss of each log interval.

    Interval sums live in one device tensor and are read once, after the loop, so the
    loop itself never waits for the device.
    """
    intervals = max(1, -(-steps // log_interval))
    loss_sums = torch.zeros(intervals, device=device)
    for step in range(steps):
        loss_sums[step // log_interval] += step_fn()
    counts = [min(log_interval, steps - i * log_interval) for i in range(intervals)]
    return [total / count for total, count in zip(loss_sums.tolist(), counts)]
