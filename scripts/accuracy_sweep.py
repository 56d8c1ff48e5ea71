"""Which task settings does every seed of a preset learn? A GPU-time experiment, not a test.

The `gpu` preset's copy task was learned by some seeds and not others (docs/gpu_check.md), so
the bench could not judge AMP's accuracy against FP32. This trains the preset's reference run
(the same sessions the bench's accuracy runs use: eager, no loader workers) for each candidate
period and learning rate, mode and seed, evaluates every `--eval-every` steps, and prints one
JSON line per evaluation and a table at the end, stopping cleanly at `--deadline`.

    python scripts/accuracy_sweep.py --preset gpu --device cuda --modes bf16 \
        --periods 64 16 --learning-rates 3e-4 1e-3 --seeds 0 1 2 -o sweep.jsonl
    python scripts/accuracy_sweep.py --preset tiny --device cpu --steps 20   # anywhere, seconds
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from verifier.dynamic.measure import matmul_precision
from verifier.reference_impl.data import PeriodicCopyTask
from verifier.reference_impl.presets import get_preset
from verifier.reference_impl.train import AUTOCAST_DTYPES
from verifier.reference_impl.session import build_session


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="gpu")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--modes", nargs="+", default=["bf16"], choices=list(AUTOCAST_DTYPES))
    parser.add_argument("--periods", nargs="+", type=int, default=None, help="default: the preset's")
    parser.add_argument("--learning-rates", nargs="+", type=float, default=None, help="default: the preset's")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None, help="default: the preset's accuracy_steps")
    parser.add_argument("--confirm-modes", nargs="*", default=[], choices=list(AUTOCAST_DTYPES),
                        help="after the sweep, train these modes too on the setting whose worst seed did best")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds; runs not started by then are skipped")
    parser.add_argument("-o", "--output", type=Path, default=None, help="JSON lines, one per evaluation")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        base = get_preset(args.preset)
    except ValueError as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    if base.name == "gpu" and device.type != "cuda":
        # At full size on CPU it grows to tens of GB before the first step, as the bench says.
        print("error: --preset gpu needs a CUDA device; use --preset tiny on CPU", file=sys.stderr)
        return 2
    steps = args.steps or base.accuracy_steps
    started = time.monotonic()
    rows: list[dict] = []
    try:
        sink = args.output.open("w") if args.output else None
    except OSError as problem:
        print(f"error: cannot write {args.output}: {problem.strerror}", file=sys.stderr)
        return 2
    settings = [(period, learning_rate) for period in args.periods or [base.period]
                for learning_rate in args.learning_rates or [base.learning_rate]]
    plan = [(mode, setting) for mode in args.modes for setting in settings]
    confirmed = False
    while plan:
        mode, (period, learning_rate) = plan.pop(0)
        preset = dataclasses.replace(base, period=period, learning_rate=learning_rate)
        for seed in args.seeds:
            if time.monotonic() - started > args.deadline:
                print(f"# deadline: skipped {mode} period={period} lr={learning_rate:g} seed={seed}", flush=True)
                continue
            for row in _train(preset, mode, device, seed, steps, args.eval_every):
                rows.append(row)
                line = json.dumps(row)
                print(line, flush=True)
                if sink:
                    sink.write(line + "\n")
                    sink.flush()
        if not plan and args.confirm_modes and not confirmed:
            confirmed = True
            best = _best_setting(rows, steps)
            if best is not None:
                print(f"# confirming period={best[0]} lr={best[1]:g} in {', '.join(args.confirm_modes)}", flush=True)
                plan = [(mode, best) for mode in args.confirm_modes]
    if sink:
        sink.close()
    print(_table(rows, steps))
    return 0


def _train(preset, mode: str, device: torch.device, seed: int, steps: int, eval_every: int):
    """One accuracy run, as the bench makes it (TF32 matmuls for tf32 only); yields a row per evaluation."""
    ceiling = PeriodicCopyTask(preset.vocab_size, preset.seq_len, preset.period, preset.noise).ceiling_accuracy
    started = time.monotonic()
    session = build_session(preset, mode, device, seed, num_workers=0)
    try:
        with matmul_precision(mode, device):
            for step in range(1, steps + 1):
                session.step()
                if step % eval_every == 0 or step == steps:
                    evaluation = session.evaluate()
                    yield {"mode": mode, "period": preset.period, "learning_rate": preset.learning_rate, "seed": seed,
                           "step": step, "accuracy": evaluation.accuracy, "loss": evaluation.loss, "ceiling": ceiling,
                           "seconds": round(time.monotonic() - started, 2)}
    finally:
        session.close()


def _best_setting(rows: list[dict], steps: int) -> tuple[int, float] | None:
    """The (period, learning rate) whose worst seed's final accuracy, as a share of the ceiling, is highest."""
    worst: dict[tuple[int, float], float] = {}
    for row in rows:
        if row["step"] == steps:
            key = (row["period"], row["learning_rate"])
            worst[key] = min(worst.get(key, float("inf")), row["accuracy"] / row["ceiling"])
    return max(worst, key=worst.get) if worst else None


def _table(rows: list[dict], steps: int) -> str:
    """Final accuracy per setting and seed, and how many seeds reached half the ceiling."""
    finals: dict[tuple, dict[int, float]] = {}
    ceilings: dict[tuple, float] = {}
    for row in rows:
        if row["step"] == steps:
            key = (row["mode"], row["period"], row["learning_rate"])
            finals.setdefault(key, {})[row["seed"]] = row["accuracy"]
            ceilings[key] = row["ceiling"]
    lines = [f"| mode | period | learning rate | accuracy at step {steps}, per seed | seeds past half the ceiling |",
             "|---|---|---|---|---|"]
    for (mode, period, learning_rate), by_seed in finals.items():
        ceiling = ceilings[(mode, period, learning_rate)]
        cells = ", ".join(f"{seed}: {accuracy:.4f}" for seed, accuracy in sorted(by_seed.items()))
        learned = sum(accuracy > ceiling / 2 for accuracy in by_seed.values())
        lines.append(f"| {mode} | {period} | {learning_rate:g} | {cells} | {learned} of {len(by_seed)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
