"""The short plain-text summary `verify-perf bench` prints: one row per mode, one line per
target. Figures that were not measured read "n/m", never zero."""

from __future__ import annotations

from collections.abc import Callable

from verifier.dynamic.results import DynamicResult, ModeResult, SyncSite, Verdict

NOT_MEASURED = "n/m"


def format_summary(result: DynamicResult) -> str:
    lines = [_headline(result), _method_line(result), *_budget_lines(result)]
    if result.error:
        lines.append(f"error: {result.error}")
    if result.modes:
        lines.append("")
        lines += _mode_table(result.modes)
        errors = [f"  {m.mode}: {m.error}" for m in result.modes if m.error]
        if errors:
            lines += ["failures:", *errors]
        sites = [f"  {m.mode}: {s.location} {s.kind} x{s.count}" for m in result.modes for s in m.sync_sites]
        if sites:
            lines += ["user sync sites (sync-counting pass):", *sites]
        library = [f"  {m.mode}: {library_site_line(s, result.method.sync_steps)}" for m in result.modes for s in m.library_sync_sites]
        if library:
            lines += ["library sync sites (made inside the library, not in your code; sync-counting pass):", *library]
    lines += _accuracy_lines(result)
    if result.verdicts:
        lines += ["", "targets:"]
        lines += [_verdict_line(v) for v in result.verdicts]
    for mode in result.modes:
        split = mode.memory_split
        if split is not None:
            lines.append(
                f"peak split {mode.mode}{' (estimate)' if split.estimated else ''}: parameters {split.parameters_bytes / 2**20:,.1f} MiB, "
                f"gradients {split.gradients_bytes / 2**20:,.1f} MiB, optimizer state {split.optimizer_state_bytes / 2**20:,.1f} MiB, "
                f"activations and other {split.activations_other_bytes / 2**20:,.1f} MiB"
            )
        elif mode.memory_split_note:
            lines.append(f"peak split {mode.mode}: {mode.memory_split_note}")
    memory_methods = {m.memory_method for m in result.modes if m.memory_method}
    lines += [f"memory: {method}" for method in sorted(memory_methods)]
    if result.overhead_bound is not None:
        lines.append(f"workload: {result.overhead_note}")
    if result.chart_path:
        lines.append(f"chart: {result.chart_path}")
    elif result.chart_note:
        lines.append(result.chart_note)
    return "\n".join(lines)


def _headline(result: DynamicResult) -> str:
    workload = result.workload
    details = []
    if workload.parameters is not None:
        details.append(f"{workload.parameters:,} parameters")
    if workload.tokens_per_step is not None:
        details.append(f"{workload.tokens_per_step:,} tokens/step")
    described = f" ({', '.join(details)})" if details else ""
    device = result.device
    return f"{workload.source} {workload.name}{described} on {device.backend}: {device.name}"


def _method_line(result: DynamicResult) -> str:
    method = result.method
    return (
        f"method: {method.timer}; {method.warmup_steps} warm-up, {method.repeats} x {method.steps} timed, "
        f"{method.sync_steps} sync-counting steps per mode; seed {method.seed}"
    )


def library_site_line(site: SyncSite, steps: int, where: Callable[[str], str] = str) -> str:
    """One library sync site in words: the call, the library, what it did, how often, and
    whether it is a device sync on CUDA; `where` formats the location (a code span in markdown)."""
    per_step = f", {site.count / steps:g} per step" if steps else ""
    on_cuda = {True: "syncs", False: "no sync", None: "not known"}[site.on_cuda]
    note = f" ({site.cuda_note})" if site.cuda_note else ""
    call = f"{site.call} ({site.library})" if site.call else site.kind
    return f"{where(site.location)} {call}: {site.operation or site.kind} x{site.count}{per_step}; on CUDA: {on_cuda}{note}"


def _budget_lines(result: DynamicResult) -> list[str]:
    """The whole run's budget, what it used, and each cut on a line of its own."""
    method = result.method
    if method.time_budget_s is None:
        return []
    used = f", {method.elapsed_s:.1f} s used" if method.elapsed_s is not None else ""
    if not method.budget_cuts:
        return [f"time budget: {method.time_budget_s:g} s{used}; nothing cut"]
    return [f"time budget: {method.time_budget_s:g} s{used}; cut to fit:", *(f"  {cut}" for cut in method.budget_cuts)]


def _accuracy_lines(result: DynamicResult) -> list[str]:
    """Where each mode's accuracy comes from: the seeds and their figures, or one run."""
    lines = []
    for mode in result.modes:
        if mode.accuracy_runs:
            seeds = ", ".join(
                f"seed {run.seed} {_number(run.accuracy, '{:.4f}')}" + (f" (failed: {run.error})" if run.error else "")
                for run in mode.accuracy_runs
            )
            lines.append(f"accuracy {mode.mode}: mean {_number(mode.accuracy, '{:.4f}')} of {seeds}, "
                         f"fresh runs of {result.method.accuracy_steps} steps each")
        elif mode.accuracy_note:
            lines.append(f"accuracy {mode.mode}: {mode.accuracy_note}")
    return lines


def _mode_table(modes: tuple[ModeResult, ...]) -> list[str]:
    header = ["mode", "step ms", "IQR ms", "tokens/s", "peak MiB", "eval loss", "accuracy", "syncs/step", "lib syncs/step"]
    rows = [header] + [_mode_row(m) for m in modes]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _mode_row(mode: ModeResult) -> list[str]:
    timing = mode.step_time
    return [
        mode.mode,
        _number(timing.median_ms if timing else None, "{:.2f}"),
        _number(timing.iqr_ms if timing else None, "{:.2f}"),
        _number(mode.tokens_per_second, "{:,.0f}"),
        _number(mode.peak_memory_bytes / 2**20 if mode.peak_memory_bytes is not None else None, "{:,.0f}"),
        _number(mode.eval_loss, "{:.4f}"),
        _number(mode.accuracy, "{:.4f}"),
        _number(mode.user_syncs_per_step, "{:g}"),
        _number(mode.library_syncs_per_step, "{:g}"),
    ]


def _number(value: float | None, pattern: str) -> str:
    return NOT_MEASURED if value is None else pattern.format(value)


def _verdict_line(verdict: Verdict) -> str:
    if verdict.measured is None:
        measured = "not measured"
    elif verdict.unit == "x":
        measured = f"{verdict.measured:.2f}x"
    else:
        measured = f"{verdict.measured:+.4f}" if verdict.name == "accuracy_degradation" else f"{verdict.measured:.1%}"
    if verdict.interval is not None:
        measured += f" [95% interval {verdict.interval[0]:.2f}x..{verdict.interval[1]:.2f}x]"
    return f"  {verdict.status.value:<13}  {verdict.label}: {measured} ({verdict.reason})"
