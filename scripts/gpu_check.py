"""The prepared GPU check: on a CUDA machine, the `gpu`-marked tests and the reference bench in
every precision mode, compile off and on, summed up in one markdown table, in under 8 minutes.

    python scripts/gpu_check.py -o gpu_check.md            # on a CUDA machine
    python scripts/gpu_check.py --dry-run -o dry_run.md    # anywhere: the same code on CPU, tiny preset
    python scripts/gpu_check.py --log-dir logs             # also keep each step's output and JSON

Needs the project installed with its test extra (`pip install -e '.[test]'`). Each step runs as a
subprocess under a timeout taken from what is left of the deadline (default 560 s), so the whole
check ends in time even when a step hangs; a step that fails or times out is a row that says so.
The table: device, driver, modes, step time with its 95 % interval, speedup against TF32 and
against strict FP32, MFU, the peak-memory split, the accuracy band, syncs per step and NVML
utilisation, per mode and compile setting. Exit code 0 when every step ran and passed, else 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifier.dynamic.intervals import median_interval, ratio_interval

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 560.0
MIB = 2**20


@dataclass(frozen=True)
class Setup:
    """What one check runs: the GPU check, or its CPU dry run."""

    preset: str
    device: str
    bench_budget_s: float
    compile_budget_s: float
    tests_timeout_s: float
    deadline_s: float


# The eager bench holds the accuracy runs (three modes, about 65 s a seed on an H200); the
# compiled one makes none (`--accuracy-seeds 0`), so it needs its timing only.
GPU = Setup(preset="gpu", device="cuda", bench_budget_s=240.0, compile_budget_s=120.0, tests_timeout_s=100.0,
            deadline_s=DEADLINE_S)
DRY_RUN = Setup(preset="tiny", device="cpu", bench_budget_s=5.0, compile_budget_s=5.0, tests_timeout_s=120.0,
                deadline_s=DEADLINE_S)


@dataclass
class Step:
    """One subprocess of the check: what ran, how it ended, and what it left."""

    name: str
    command: list[str]
    seconds: float = 0.0
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""
    result: dict | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.returncode == 0


def run_step(step: Step, timeout_s: float) -> Step:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            step.command, cwd=ROOT, capture_output=True, text=True, timeout=max(1.0, timeout_s), check=False,
        )
        step.returncode, step.output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        step.timed_out = True
        step.output = _text(expired.stdout) + _text(expired.stderr)
    step.seconds = time.perf_counter() - started
    return step


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def gpu_tests(tests: str, setup: Setup, timeout_s: float) -> Step:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-rs", tests]
    return run_step(Step("gpu-marked tests", command), timeout_s)


def bench(setup: Setup, compiled: bool, budget_s: float, timeout_s: float, folder: Path) -> Step:
    output = folder / f"bench_{'compiled' if compiled else 'eager'}.json"
    command = [
        sys.executable, "-m", "verifier", "bench", "--preset", setup.preset, "--device", setup.device,
        "--time-budget", f"{budget_s:g}", "-o", str(output), "--force",
    ]
    if compiled:
        # The accuracy runs are eager whatever --compile says: the eager bench already made them.
        command += ["--compile", "--accuracy-seeds", "0"]
    step = run_step(Step(f"bench, compile {'on' if compiled else 'off'}", command), timeout_s)
    if output.exists():
        try:
            step.result = json.loads(output.read_text())
        except (OSError, ValueError) as error:
            step.notes.append(f"result unreadable: {error}")
    return step


def tests_summary(step: Step) -> str:
    """pytest's last summary line ("8 passed, 1 skipped in 41.2s"), or how the step ended."""
    if step.timed_out:
        return f"timed out after {step.seconds:.0f} s"
    lines = [line.strip("= ").strip() for line in step.output.splitlines() if re.search(r"\b(passed|failed|skipped|deselected|error)", line)]
    found = lines[-1] if lines else f"exit code {step.returncode}"
    return found if step.returncode in (0, 5) else f"FAILED: {found}"


def _ms(value: float | None) -> str:
    return "n/m" if value is None else f"{value:.2f}"


def _step_time(mode: dict) -> str:
    timing = mode.get("step_time")
    if not timing:
        return "n/m"
    interval = median_interval(tuple(timing.get("samples_ms") or ()))
    shown = f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
    return f"{timing['median_ms']:.2f}{shown}"


def _speedup(base: dict | None, mode: dict) -> str:
    if base is None or base is mode or not base.get("step_time") or not mode.get("step_time"):
        return "—" if base is mode else "n/m"
    base_samples, samples = tuple(base["step_time"]["samples_ms"]), tuple(mode["step_time"]["samples_ms"])
    ratio = statistics.median(base_samples) / statistics.median(samples)
    interval = ratio_interval(base_samples, samples)
    return f"{ratio:.2f}x" + (f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else "")


def _memory(mode: dict) -> str:
    split = mode.get("memory_split")
    if split:
        parts = (split["parameters_bytes"], split["gradients_bytes"], split["optimizer_state_bytes"], split["activations_other_bytes"])
        label = " est." if split.get("estimated") else ""
        return f"{split['peak_bytes'] / MIB:,.0f}{label}: " + " / ".join(f"{part / MIB:,.0f}" for part in parts)
    if mode.get("peak_memory_bytes") is not None:
        return f"{mode['peak_memory_bytes'] / MIB:,.0f} (no split)"
    return "n/m"


def _accuracy(mode: dict) -> str:
    accuracy = mode.get("accuracy")
    if accuracy is None:
        return "n/m"
    runs = [run["accuracy"] for run in mode.get("accuracy_runs") or () if run.get("accuracy") is not None]
    if len(runs) >= 2:
        return f"{accuracy:.4f} ({min(runs):.4f}–{max(runs):.4f}, {len(runs)} seeds)"
    return f"{accuracy:.4f} (one run)"


def _syncs(mode: dict) -> str:
    user, library = mode.get("user_syncs_per_step"), mode.get("library_syncs_per_step")
    if user is None:
        return "n/m"
    return f"{user:g} / {library:g}" if library is not None else f"{user:g}"


def _utilisation(mode: dict) -> str:
    utilisation = mode.get("utilization")
    if not utilisation or utilisation.get("gpu_util_percent_mean") is None:
        return "n/m (no NVML)"
    memory = utilisation.get("memory_used_bytes_max")
    used = f", {memory / MIB:,.0f} MiB used" if memory is not None else ""
    return f"{utilisation['gpu_util_percent_mean']:.0f} % (max {utilisation.get('gpu_util_percent_max') or 0:.0f} %){used}"


def _mfu(mode: dict) -> str:
    return "n/m" if mode.get("mfu") is None else f"{mode['mfu']:.1%}"


HEADER = (
    "compile", "mode", "step ms, median (95% interval)", "vs TF32", "vs strict FP32", "MFU",
    "peak MiB: params / grads / optimizer / activations", "accuracy (seed band)", "syncs/step user / library",
    "GPU utilisation (NVML)",
)


def bench_rows(step: Step, compiled: bool) -> list[tuple[str, ...]]:
    label = "on" if compiled else "off"
    if step.result is None:
        why = f"timed out after {step.seconds:.0f} s" if step.timed_out else f"no result (exit code {step.returncode})"
        return [(label, "—", why, *("",) * (len(HEADER) - 3))]
    modes = step.result.get("modes") or []
    by_name = {mode["mode"]: mode for mode in modes}
    rows = []
    for mode in modes:
        if mode.get("error"):
            rows.append((label, mode["mode"], f"failed: {mode['error']}", *("",) * (len(HEADER) - 3)))
            continue
        rows.append((
            label, mode["mode"], _step_time(mode), _speedup(by_name.get("tf32"), mode), _speedup(by_name.get("fp32"), mode),
            _mfu(mode), _memory(mode), _accuracy(mode), _syncs(mode), _utilisation(mode),
        ))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(setup: Setup, dry_run: bool, tests: Step | None, benches: list[tuple[bool, Step]], total_s: float) -> str:
    first = next((step.result for _, step in benches if step.result), None)
    device = (first or {}).get("device") or {}
    described = (
        f"- Device: {device.get('name', 'unknown')} ({device.get('backend', setup.device)}); driver "
        f"{device.get('driver') or 'n/a'}; CUDA {device.get('cuda_version') or 'n/a'}; torch {device.get('torch_version') or 'n/a'}; "
        f"compute capability {device.get('compute_capability') or 'n/a'}; NVML: {device.get('nvml', 'not queried')}"
    )
    lines = [
        "# GPU check" + (" (dry run on CPU: the same code, the tiny preset)" if dry_run else ""),
        "",
        described,
        f"- `gpu`-marked tests: {tests_summary(tests) if tests is not None else 'not run (no time left)'}",
    ]
    for compiled, step in benches:
        result = step.result or {}
        method = result.get("method") or {}
        cuts = "; ".join(method.get("budget_cuts") or ()) or "nothing cut"
        lines.append(
            f"- Bench, compile {'on' if compiled else 'off'}: `verify-perf bench --preset {setup.preset}"
            f"{' --compile --accuracy-seeds 0' if compiled else ''}`, {step.seconds:.0f} s wall; budget "
            f"{method.get('time_budget_s', 'n/a')} s, {method.get('repeats', 'n/m')} x {method.get('steps', 'n/m')} timed steps, "
            f"accuracy {len(method.get('accuracy_seeds') or ())} seeds x {method.get('accuracy_steps') or 0} steps, "
            f"FP32 baseline {result.get('fp32_baseline', 'n/a')}; cut: {cuts}"
        )
    lines.append(f"- Whole check: {total_s:.0f} s of a {setup.deadline_s:.0f} s deadline")
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for compiled, step in benches:
        lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in bench_rows(step, compiled)]
    verdicts = [
        f"- compile {'on' if compiled else 'off'}: {v['label']}: {v['status']} ({v['reason']})"
        for compiled, step in benches for v in (step.result or {}).get("verdicts") or ()
    ]
    if verdicts:
        lines += ["", "Targets:", "", *verdicts]
    return "\n".join(lines) + "\n"


def check(setup: Setup, dry_run: bool, tests_path: str, compile_runs: tuple[bool, ...], folder: Path) -> tuple[str, bool, list[Step]]:
    started = time.perf_counter()

    def left() -> float:
        return setup.deadline_s - (time.perf_counter() - started)

    benches: list[tuple[bool, Step]] = []
    # The eager bench first: it is the headline; then the tests; the compiled bench gets what is left.
    reserve_after = setup.tests_timeout_s + (setup.compile_budget_s + 30 if True in compile_runs else 0)
    if False in compile_runs:
        budget = max(1.0, min(setup.bench_budget_s, left() - reserve_after - 30))
        benches.append((False, bench(setup, False, budget, budget + 30, folder)))
    tests = gpu_tests(tests_path, setup, min(setup.tests_timeout_s, left() - 10)) if left() > 20 else None
    if True in compile_runs and left() > 40:
        budget = max(1.0, min(setup.compile_budget_s + 40, left() - 35))
        benches.append((True, bench(setup, True, budget, left() - 5, folder)))
    table = render(setup, dry_run, tests, benches, time.perf_counter() - started)
    passed = tests is not None and tests.returncode in (0, 5) and not tests.timed_out
    passed = passed and len(benches) == len(compile_runs) and all(step.ok and step.result for _, step in benches)
    steps = [step for _, step in benches] + ([tests] if tests is not None else [])
    return table, passed, steps


def keep_logs(steps: list[Step], folder: Path) -> None:
    """One log per step: a check that fails on a lent GPU is diagnosed from what it left."""
    for step in steps:
        slug = re.sub(r"[^a-z0-9]+", "_", step.name.lower()).strip("_")
        ended = "timed out" if step.timed_out else f"exit code {step.returncode}"
        header = f"$ {' '.join(step.command)}\n# {ended} after {step.seconds:.1f} s\n"
        (folder / f"{slug}.log").write_text(header + step.output, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/gpu_check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default="gpu_check.md", help="markdown file to write (default: gpu_check.md)")
    parser.add_argument("--dry-run", action="store_true", help="run on CPU with the tiny preset (what CI does)")
    parser.add_argument("--tests", default="tests", help="where the gpu-marked tests are (default: tests)")
    parser.add_argument("--compile", choices=("off", "on", "both"), default="both", help="bench compile settings (default: both)")
    parser.add_argument("--deadline", type=float, help=f"seconds the whole check may take (default: {DEADLINE_S:g})")
    parser.add_argument(
        "--bench-budget", type=float,
        help="seconds for the eager bench, accuracy runs included (default: 240 on a GPU, 5 on the dry run)",
    )
    parser.add_argument(
        "--log-dir", help="keep each step's output (<step>.log) and each bench's JSON result in this folder",
    )
    args = parser.parse_args(argv)
    dry_run = args.dry_run or not _cuda_available()
    setup = DRY_RUN if dry_run else GPU
    if args.deadline or args.bench_budget:
        setup = dataclasses.replace(
            setup, bench_budget_s=args.bench_budget or setup.bench_budget_s, deadline_s=args.deadline or setup.deadline_s,
        )
    compile_runs = {"off": (False,), "on": (True,), "both": (False, True)}[args.compile]
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as scratch:
        folder = Path(args.log_dir) if args.log_dir else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        table, passed, steps = check(setup, dry_run, args.tests, compile_runs, folder)
        if args.log_dir:
            keep_logs(steps, folder)
    partial = Path(f"{args.output}.partial")
    partial.write_text(table, encoding="utf-8")
    os.replace(partial, args.output)  # never a half-written table
    sys.stdout.write(table)
    return 0 if passed else 1


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


if __name__ == "__main__":
    sys.exit(main())
