"""Named workload sizes: `tiny` proves the pipeline on a CPU in seconds, `gpu` is big enough
that a modern GPU is compute-bound, which is where AMP speedups can show."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    """Model shape, task, optimiser settings and the harness's default step counts.

    steps is the standalone training length; bench_warmup/bench_steps/bench_repeats/
    bench_sync_steps are what the dynamic harness uses unless told otherwise. noise is the
    share of repeated tokens replaced at random (the task's accuracy ceiling is
    1 - noise + noise / vocab_size). accuracy_steps is the fixed training length of the
    harness's accuracy runs (fresh, untimed, one per mode and seed), chosen so that FP32
    reaches the ceiling in it; the comparison asks whether AMP gets there in the same steps.
    cpu_threads caps torch's intra-op threads on CPU (None: torch's default).
    bench_time_budget_s is the harness's default budget for the whole run (`--time-budget`).
    """

    name: str
    description: str
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    mlp_ratio: int
    seq_len: int
    batch_size: int
    period: int
    noise: float
    learning_rate: float
    weight_decay: float
    max_grad_norm: float
    steps: int
    log_interval: int
    train_batches: int
    eval_batches: int
    num_workers: int
    bench_warmup: int
    bench_steps: int
    bench_repeats: int
    bench_sync_steps: int
    accuracy_steps: int
    bench_time_budget_s: float
    cpu_threads: int | None = None

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.seq_len


PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        name="tiny",
        description="2-layer, d=32 decoder LM on a period-4 copy task, 20% of repeated tokens random "
        "(accuracy ceiling 0.806); CPU, seconds",
        vocab_size=32,
        d_model=32,
        n_layers=2,
        n_heads=4,
        mlp_ratio=4,
        seq_len=32,
        batch_size=32,
        # Period 8 without noise reached accuracy 1.0000 in 60 steps: saturated, it could not
        # show a precision loss. Period 4 with 20 % noise reaches its 0.806 ceiling in about 50.
        period=4,
        noise=0.2,
        learning_rate=1e-2,
        weight_decay=0.0,
        max_grad_norm=1.0,
        steps=100,
        log_interval=20,
        train_batches=512,
        eval_batches=4,
        num_workers=1,
        bench_warmup=40,
        bench_steps=10,
        bench_repeats=5,
        bench_sync_steps=3,
        # FP32 and BF16 were at the ceiling by step 60 for seeds 0-8 (measured; docs/dynamic-harness.md).
        accuracy_steps=60,
        # With the interpreter and torch starting in 2-4 s, the whole bench stays under 10 s.
        bench_time_budget_s=5.0,
        # Its matmuls are too small to gain from threads, and spinning threads collapse when
        # another process shares the cores; one thread leaves a core for the DataLoader worker.
        cpu_threads=1,
    ),
    "gpu": Preset(
        name="gpu",
        description="8-layer, d=1024 decoder LM (~110M parameters), 32 x 1024 tokens per step, on a period-16 "
        "copy task, 20% of repeated tokens random (accuracy ceiling 0.800)",
        vocab_size=8192,
        d_model=1024,
        n_layers=8,
        n_heads=16,
        mlp_ratio=4,
        seq_len=1024,
        # Activations, which autocast halves, should outweigh the FP32 weights, gradients and
        # Adam state, which it does not; a large batch keeps the GPU compute-bound too.
        batch_size=32,
        # On an H200 (scripts/accuracy_sweep.py, docs/gpu_check.md) the 64-token offset was learned
        # suddenly and by one seed of three, at either learning rate tried; the 16-token offset
        # reached the ceiling by step 150 in every seed (0-2) and mode (tf32, fp16, bf16).
        period=16,
        noise=0.2,
        learning_rate=3e-4,
        weight_decay=0.1,
        max_grad_norm=1.0,
        steps=300,
        log_interval=50,
        train_batches=4096,
        eval_batches=8,
        num_workers=4,
        bench_warmup=10,
        bench_steps=10,
        bench_repeats=5,
        bench_sync_steps=2,
        # Every seed and mode read about 0.1 at step 100 and the ceiling at step 150 (H200,
        # docs/gpu_check.md): the task is learned in a burst, so the runs get 50 steps of room.
        accuracy_steps=200,
        # Four modes timed (about 65 s on an H200) and three seeds of the tf32, fp16 and bf16
        # accuracy runs (about 65 s a seed): under 150 s none fitted, and halved runs learn nothing.
        bench_time_budget_s=300.0,
    ),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r} (expected one of {', '.join(PRESETS)})") from None
