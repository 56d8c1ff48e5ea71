"""Builds one training run (model, optimiser, scaler, data) from a preset, identically for
every precision mode: same seed, same initial weights, same batches in the same order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

from verifier.reference_impl.data import PeriodicCopyTask, SyntheticBatches, endless, make_loader
from verifier.reference_impl.ddp import DistributedContext, wrap_model
from verifier.reference_impl.model import DecoderLM
from verifier.reference_impl.presets import Preset
from verifier.reference_impl.train import Evaluation, Precision, evaluate, make_optimizer, train_step


@dataclass
class TrainingSession:
    """A ready-to-step training run. `step()` runs one optimisation step and returns the
    detached loss on the device; `evaluate()` scores the held-out batches."""

    preset: Preset
    precision: Precision
    device: torch.device
    model: nn.Module
    core_model: DecoderLM
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    eval_loader: torch.utils.data.DataLoader
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]] = field(repr=False)
    compiled: bool = False

    @property
    def tokens_per_step(self) -> int:
        return self.preset.tokens_per_step

    def step(self, eager: bool = False) -> torch.Tensor:
        """One step; `eager` steps the uncompiled model (same weights) so that counting syncs
        under a Python mode never recompiles the compiled one."""
        inputs, targets = next(self.batches)
        return train_step(
            self.core_model if eager and self.compiled and self.model is not self.core_model else self.model,
            self.optimizer,
            self.scaler,
            self.precision,
            inputs.to(self.device, non_blocking=True),
            targets.to(self.device, non_blocking=True),
            self.preset.max_grad_norm,
        )

    def evaluate(self) -> Evaluation:
        return evaluate(self.core_model, self.eval_loader, self.precision, self.device)

    def close(self) -> None:
        """Stop the loader workers now rather than whenever the garbage collector runs."""
        self.batches.close()


def build_session(
    preset: Preset,
    mode: str,
    device: torch.device,
    seed: int = 0,
    compile_model: bool = False,
    distributed: DistributedContext | None = None,
    num_workers: int | None = None,
) -> TrainingSession:
    """`num_workers` overrides the preset's DataLoader workers (0: batches made in this process,
    as the untimed accuracy runs do, which need no worker start-up per run)."""
    torch.manual_seed(seed)
    core_model = DecoderLM(
        vocab_size=preset.vocab_size,
        d_model=preset.d_model,
        n_layers=preset.n_layers,
        n_heads=preset.n_heads,
        max_seq_len=preset.seq_len,
        mlp_ratio=preset.mlp_ratio,
    ).to(device)
    model: nn.Module = wrap_model(core_model, distributed) if distributed else core_model
    if compile_model:
        model = torch.compile(model)
    rank, world_size = (distributed.rank, distributed.world_size) if distributed else (0, 1)
    task = PeriodicCopyTask(preset.vocab_size, preset.seq_len, preset.period, preset.noise)
    workers = preset.num_workers if num_workers is None else num_workers
    train_data = SyntheticBatches(task, preset.batch_size, preset.train_batches, seed, "train")
    eval_data = SyntheticBatches(task, preset.batch_size, preset.eval_batches, seed, "eval")
    precision = Precision(mode, device.type)
    return TrainingSession(
        preset=preset,
        precision=precision,
        device=device,
        model=model,
        core_model=core_model,
        optimizer=make_optimizer(model, preset.learning_rate, preset.weight_decay),
        scaler=precision.grad_scaler(),
        eval_loader=make_loader(eval_data, device, workers, rank, world_size),
        batches=endless(make_loader(train_data, device, workers, rank, world_size)),
        compiled=compile_model,
    )
