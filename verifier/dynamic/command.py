"""Command-line glue for the harness: the options `verify-perf bench` and `--dynamic` share,
`run_bench` for the `bench` subcommand, and `run_dynamic` for `verify-perf PATH --dynamic`.

Progress is drawn on stderr only when it is a terminal and CI is not set, so CI logs and
piped output stay clean.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verifier.dynamic.harness import HarnessOptions, HarnessUsageError, ProgressCallback, run_harness
from verifier.dynamic.results import MODES, DynamicResult, Thresholds
from verifier.dynamic.streams import user_output_to_stderr
from verifier.dynamic.summary import format_summary
from verifier.errors import UsageError
from verifier.writing import output_target, write_output

_PRESET_CHOICES = ("auto", "tiny", "gpu")


def add_harness_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Options that choose and size the measured workload; safe to add next to the analyzer's."""
    parser.add_argument(
        "--preset",
        choices=_PRESET_CHOICES,
        default="auto",
        help="reference workload size (default: gpu on CUDA, tiny on CPU)",
    )
    parser.add_argument(
        "--modes",
        help=f"comma-separated precision modes from {','.join(MODES)} (default: all four on CUDA, fp32,bf16 on CPU)",
    )
    parser.add_argument("--steps", type=int, help="timed steps per repeat (default: the preset's)")
    parser.add_argument("--warmup", type=int, help="untimed warm-up steps per mode (default: the preset's)")
    parser.add_argument("--repeats", type=int, help="timed repeats per mode, at least (default: the preset's)")
    parser.add_argument(
        "--max-repeats", type=int,
        help="more repeats while a speedup interval is wide, up to this (default: 4 x --repeats on CUDA; on CPU, where the speedup is not judged, --repeats)"
    )
    parser.add_argument(
        "--time-budget", type=float, metavar="SECONDS",
        help="seconds for the whole run: warm-up, timing, sync counting, evaluation and accuracy runs are planned "
        "to fit, and what was cut is reported (default: the preset's, 5 for tiny and 150 for gpu; 120 for --entry)",
    )
    parser.add_argument("--sync-steps", type=int, help="steps in the untimed sync-counting pass (default: the preset's)")
    parser.add_argument(
        "--accuracy-seeds", type=int, default=3, metavar="N",
        help="seeded accuracy runs per mode, seeds --seed .. --seed + N - 1 (default: 3; 0: none)",
    )
    parser.add_argument(
        "--accuracy-steps", type=int, metavar="N",
        help="fixed training length of each accuracy run (default: the preset's, or the entry's accuracy_steps, or 100)",
    )
    parser.add_argument(
        "--entry",
        metavar="MODULE:FUNCTION",
        help="measure your own training step instead of the reference (see verifier/dynamic/entry.py)",
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--seed", type=int, default=0, help="seed every mode starts from (default: 0)")
    parser.add_argument(
        "--threads", type=int, help="intra-op CPU threads for CPU runs, entries included (default: the preset's cap; torch's for entries)"
    )
    parser.add_argument("--compile", action="store_true", help="wrap the reference model in torch.compile")
    parser.add_argument("--min-speedup", type=float, help="speedup target (default: 1.5)")
    parser.add_argument("--min-memory-reduction", type=float, help="peak-memory reduction target, 0..1 (default: 0.40)")
    parser.add_argument("--max-accuracy-degradation", type=float, help="accuracy drop allowed, 0..1 (default: 0.01)")


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    """Everything `verify-perf bench` takes: the harness options plus where results go."""
    add_harness_arguments(parser)
    parser.add_argument("--output", "-o", metavar="FILE", help="write the result as JSON to FILE")
    parser.add_argument(
        "--chart",
        metavar="FILE.png",
        help="write the PNG chart to FILE.png (default: next to --output, with a .png suffix)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON result instead of the table")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --output or --chart file that verify-perf did not write")


def options_from_args(args: argparse.Namespace, thresholds: Thresholds | None = None) -> HarnessOptions:
    """HarnessOptions from parsed arguments; command-line thresholds override `thresholds`
    (which the caller may have read from `[tool.verify-perf]`)."""
    base = thresholds or Thresholds()
    modes = getattr(args, "modes", None)
    chart = getattr(args, "chart", None)
    output = getattr(args, "output", None)
    if chart is None and output:
        chart = str(Path(output).with_suffix(".png"))
    return HarnessOptions(
        preset=getattr(args, "preset", "auto"),
        modes=tuple(part.strip() for part in modes.split(",") if part.strip()) if modes else None,
        steps=getattr(args, "steps", None),
        warmup=getattr(args, "warmup", None),
        repeats=getattr(args, "repeats", None),
        sync_steps=getattr(args, "sync_steps", None),
        entry=getattr(args, "entry", None),
        device=getattr(args, "device", "auto"),
        seed=getattr(args, "seed", 0),
        compile=getattr(args, "compile", False),
        thresholds=Thresholds(
            min_speedup=_override(args, "min_speedup", base.min_speedup),
            min_memory_reduction=_override(args, "min_memory_reduction", base.min_memory_reduction),
            max_accuracy_degradation=_override(args, "max_accuracy_degradation", base.max_accuracy_degradation),
        ),
        chart_path=chart,
        replace_chart=getattr(args, "force", False),
        threads=getattr(args, "threads", None),
        time_budget_s=getattr(args, "time_budget", None),
        budget_started_at=getattr(args, "budget_started_at", None),
        max_repeats=getattr(args, "max_repeats", None),
        accuracy_seeds=getattr(args, "accuracy_seeds", 3),
        accuracy_steps=getattr(args, "accuracy_steps", None),
    )


def _override(args: argparse.Namespace, name: str, default: float) -> float:
    value = getattr(args, name, None)
    return default if value is None else value


def progress_enabled() -> bool:
    ci = os.environ.get("CI", "").strip().lower()
    return sys.stderr.isatty() and ci in ("", "0", "false", "no")


@contextmanager
def terminal_progress(enabled: bool) -> Iterator[ProgressCallback | None]:
    """A rich progress bar per mode on stderr, removed when done; None when disabled."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, int] = {}

        def update(mode: str, phase: str, done: int, total: int) -> None:
            if mode not in tasks:
                tasks[mode] = bar.add_task(mode, total=total)
            bar.update(tasks[mode], total=total, completed=done, description=f"{mode}: {phase}")

        yield update


def run_dynamic(options: HarnessOptions | argparse.Namespace, show_progress: bool | None = None) -> DynamicResult:
    """Run the harness for `verify-perf PATH --dynamic` and `bench`. Raises HarnessUsageError for
    bad options (the caller exits 2); every workload failure is inside the result. What the
    measured code prints goes to standard error: standard output is the chosen format's."""
    if isinstance(options, argparse.Namespace):
        options = options_from_args(options)
    enabled = progress_enabled() if show_progress is None else show_progress
    with user_output_to_stderr(), terminal_progress(enabled) as progress:
        return run_harness(options, progress)


def run_bench(args: argparse.Namespace) -> int:
    """`verify-perf bench`: run, print the table (or JSON), write JSON and chart if asked.

    Returns 0 when the harness measured something (a failed mode and missed targets are in the
    output; the PASS/BLOCK gate is the main command's job) and 2 for bad options, unwritable
    output, an entry that cannot be loaded, every mode failing or a crash of the harness.
    """
    output = getattr(args, "output", None)
    try:
        if output:
            output_target(output, force=getattr(args, "force", False))  # refused before the run, not after it
        result = run_dynamic(options_from_args(args))
    except UsageError as error:
        print(f"verify-perf bench: error: {error}", file=sys.stderr)
        return 2
    except HarnessUsageError as error:
        print(f"verify-perf bench: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - a crash is exit 2 with one line, never a traceback
        print(f"verify-perf bench: error: the harness crashed: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    document = json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n"
    if output:
        try:
            write_output(output, document, force=getattr(args, "force", False))
        except UsageError as error:
            print(f"verify-perf bench: error: {error}", file=sys.stderr)
            return 2
    if getattr(args, "json", False):
        print(document, end="")
    else:
        print(format_summary(result))
    if result.failure:
        print(f"verify-perf bench: error: {result.failure}", file=sys.stderr)
        return 2
    return 0

