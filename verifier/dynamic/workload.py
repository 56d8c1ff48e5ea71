"""What the harness drives: a workload opens one run per precision mode, and a run steps,
evaluates and closes. The bundled reference preset is adapted here; user entry points are
adapted in `entry.py`."""

from __future__ import annotations

from typing import Any, Protocol

import torch

from verifier.dynamic.memory import estimate_split
from verifier.dynamic.results import MemorySplit, Workload
from verifier.reference_impl.model import DecoderLM
from verifier.reference_impl.presets import Preset
from verifier.reference_impl.session import TrainingSession, build_session
from verifier.reference_impl.train import Precision, language_model_loss, make_optimizer


class ModeRun(Protocol):
    """One precision mode's training run, freshly built from the shared seed."""

    tokens_per_step: int | None
    flops_per_step: float | None

    def step(self) -> Any:
        """One full training step; returns the loss (tensor or number) or None."""

    def evaluate(self) -> tuple[float | None, float | None]:
        """(eval loss, accuracy); either may be None when the workload cannot say."""

    def close(self) -> None: ...


class WorkloadSource(Protocol):
    info: Workload

    def open(self, mode: str, device: torch.device, seed: int) -> ModeRun: ...

    def accuracy_run(self, mode: str, device: torch.device, seed: int) -> ModeRun | None:
        """A fresh, untimed run from `seed` for the accuracy measurement; None when the workload
        cannot be re-created per seed."""

    @property
    def accuracy_steps(self) -> int | None:
        """The fixed training length of the accuracy runs the workload asks for, if any."""


class PresetRun:
    def __init__(self, session: TrainingSession) -> None:
        self.session = session
        self.tokens_per_step = session.tokens_per_step
        self.chance_accuracy = 1.0 / session.preset.vocab_size
        self.flops_per_step = float(
            session.core_model.flops_per_token(session.preset.seq_len) * session.tokens_per_step
        )

    def step(self) -> torch.Tensor:
        return self.session.step()

    def counting_step(self) -> torch.Tensor:
        """The step the sync counter watches: eager when the model is compiled."""
        return self.session.step(eager=True)

    def evaluate(self) -> tuple[float | None, float | None]:
        evaluation = self.session.evaluate()
        return evaluation.loss, evaluation.accuracy

    def close(self) -> None:
        self.session.close()

    def memory_parts(self) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        return self.session.core_model, self.session.optimizer


class PresetWorkload:
    """The reference implementation at a named size. On CUDA it trains FP32 with TF32 tensor-core
    matmuls (`fp32_configuration`), as PyTorch recommends on Ampere and newer: that is the FP32
    baseline its AMP modes are judged against; strict FP32 is timed alongside."""

    fp32_configuration = "tf32"

    def __init__(self, preset: Preset, compile_model: bool = False) -> None:
        self.preset = preset
        self.compile_model = compile_model
        self.info = Workload(
            source="preset",
            name=preset.name,
            parameters=_parameter_count(preset),
            tokens_per_step=preset.tokens_per_step,
            description=preset.description,
            compiled=compile_model,
        )

    def open(self, mode: str, device: torch.device, seed: int) -> PresetRun:
        return PresetRun(build_session(self.preset, mode, device, seed, self.compile_model))

    def accuracy_run(self, mode: str, device: torch.device, seed: int) -> PresetRun:
        """Eager and without DataLoader workers: nothing is timed, so neither compiling nor a
        worker start-up per run would buy anything; the batches are the same either way."""
        return PresetRun(build_session(self.preset, mode, device, seed, compile_model=False, num_workers=0))

    @property
    def accuracy_steps(self) -> int:
        return self.preset.accuracy_steps

    def estimate_memory(self, mode: str, seed: int = 0) -> MemorySplit | str:
        """The peak split of two reference steps at this size, estimated on fake tensors."""
        preset = self.preset

        def build() -> tuple[DecoderLM, torch.optim.Optimizer]:
            model = DecoderLM(preset.vocab_size, preset.d_model, preset.n_layers, preset.n_heads, preset.seq_len, preset.mlp_ratio)
            return model, make_optimizer(model, preset.learning_rate, preset.weight_decay)

        def step(model: DecoderLM, optimizer: torch.optim.Optimizer) -> None:
            tokens = torch.randint(0, preset.vocab_size, (preset.batch_size, preset.seq_len))
            with Precision(mode, "cpu").autocast():
                loss = language_model_loss(model(tokens), tokens)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return estimate_split(build, step)


def _parameter_count(preset: Preset) -> int:
    # From the shapes: building even a meta-device model loads torch's compiler stack (seconds).
    return DecoderLM.count_parameters(preset.vocab_size, preset.d_model, preset.n_layers, preset.seq_len, preset.mlp_ratio)
