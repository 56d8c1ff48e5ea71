"""Command line: train a preset in one precision mode and print what happened."""

from __future__ import annotations

import argparse
import math
import sys
import time

import torch

from verifier.reference_impl import ddp
from verifier.reference_impl.presets import PRESETS, get_preset
from verifier.reference_impl.session import build_session
from verifier.reference_impl.train import AUTOCAST_DTYPES, train


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m verifier.reference_impl",
        description="Train the reference decoder LM with FP32, FP16+GradScaler or BF16 autocast.",
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--mode", choices=list(AUTOCAST_DTYPES), default="bf16")
    parser.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    parser.add_argument("--log-interval", type=int, help="steps per reported loss (default: the preset's)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available")
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    preset = get_preset(args.preset)
    steps = args.steps or preset.steps
    log_interval = args.log_interval or preset.log_interval
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    context = ddp.init_distributed(use_cuda) if ddp.launched_by_torchrun() else None
    device = context.device if context else torch.device("cuda" if use_cuda else "cpu")
    if device.type == "cpu" and preset.cpu_threads:
        torch.set_num_threads(preset.cpu_threads)
    is_main = context is None or context.is_main
    world_size = context.world_size if context else 1
    try:
        session = build_session(preset, args.mode, device, args.seed, args.compile, context)
        if is_main:
            print(
                f"preset {preset.name} ({preset.description}); mode {args.mode}; device {device}; "
                f"{session.core_model.parameter_count():,} parameters; world size {world_size}"
            )
        started = time.perf_counter()
        interval_losses = train(session.step, steps, log_interval, device)
        elapsed = time.perf_counter() - started
        evaluation = session.evaluate()
        eval_figures = [evaluation.loss, evaluation.accuracy]
        if context:
            eval_figures = ddp.mean_across_ranks(eval_figures, context)
            interval_losses = ddp.mean_across_ranks(interval_losses, context)
        session.close()
    finally:
        ddp.shutdown()
    if not is_main:
        return 0
    for index, loss in enumerate(interval_losses):
        last_step = min((index + 1) * log_interval, steps)
        print(f"step {last_step:>6}  train loss {loss:.4f}")
    print(f"eval loss {eval_figures[0]:.4f}  accuracy {eval_figures[1]:.4f}")
    tokens = steps * preset.tokens_per_step * world_size
    print(
        f"{steps} steps in {elapsed:.2f} s: {1000 * elapsed / steps:.1f} ms/step, "
        f"{tokens / elapsed:,.0f} tokens/s (wall clock, includes warm-up and data loading)"
    )
    if not all(math.isfinite(loss) for loss in interval_losses):
        print("error: the training loss became NaN or infinite", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
