"""Judges each AMP mode against the FP32 baseline: speedup, peak-memory reduction and
accuracy degradation. PASS and MISS need a measured value; everything else is
NOT_EVALUATED with the reason, so a figure that was not measured never reads as passed."""

from __future__ import annotations

from dataclasses import replace

from verifier.dynamic.results import FP32_MODES, ModeResult, Thresholds, Verdict, VerdictStatus
from verifier.dynamic.intervals import ratio_interval, seed_band

SPEEDUP_BASES = {
    "fp32": "median step time against FP32 strict (TF32 off), the configuration the measured code uses",
    "tf32": "median step time against FP32 with TF32 tensor-core matmuls, the configuration the measured code uses",
}
SATURATED_ACCURACY = 0.99
"""At or above this accuracy a task no longer tells precisions apart: the target is not judged."""
ACTIVATIONS_BASIS = (
    "activations and temporaries: the peak minus parameters, gradients and optimizer state, "
    "the part autocast can change (FP32 master weights and optimizer state stay FP32)"
)

CPU_REASON = "not evaluated on CPU: speed and memory targets are judged on a CUDA device"


def judge(
    modes: tuple[ModeResult, ...],
    thresholds: Thresholds,
    backend: str,
    overhead_bound: bool | None,
    overhead_note: str,
    overhead_hint: str = "",
    baseline_mode: str = "fp32",
    accuracy_cut: str = "",
) -> tuple[Verdict, ...]:
    """Judge every AMP mode against `baseline_mode`: the FP32 configuration the measured code
    uses ("fp32" strict or "tf32"). `accuracy_cut` is what the time budget took from the accuracy
    runs; the accuracy verdict repeats it."""
    baseline = next((m for m in modes if m.mode == baseline_mode), None)
    amp_modes = [m for m in modes if m.mode not in FP32_MODES]
    if not amp_modes:
        return tuple(_all_not_evaluated("amp", thresholds, "no AMP mode was run"))
    verdicts: list[Verdict] = []
    for amp in amp_modes:
        if baseline is None:
            verdicts += _all_not_evaluated(amp.mode, thresholds, "the FP32 baseline was not run")
            continue
        verdicts.append(_speedup(baseline, amp, thresholds, backend, overhead_bound, overhead_note, overhead_hint))
        verdicts.append(_memory(baseline, amp, thresholds, backend))
        verdicts.append(_with_cut(_accuracy(baseline, amp, thresholds), accuracy_cut))
    if baseline_mode == "tf32":
        # Labelled: a reader must see the AMP figures are against TF32, not strict FP32.
        verdicts = [
            replace(v, label=v.label.replace("vs FP32", "vs TF32").replace("over FP32", "over TF32")) for v in verdicts
        ]
    if backend == "cuda":
        basis = SPEEDUP_BASES[baseline_mode]
        verdicts = [replace(v, basis=basis) if v.name == "speedup" else v for v in verdicts]
    return tuple(verdicts)


def _labels(mode: str) -> dict[str, str]:
    return {
        "speedup": f"AMP speedup over FP32 ({mode})",
        "memory_reduction": f"Peak-memory reduction vs FP32 ({mode})",
        "accuracy_degradation": f"Accuracy degradation vs FP32 ({mode})",
    }


def _verdict(
    name: str, mode: str, thresholds: Thresholds, measured: float | None, status: VerdictStatus, reason: str,
    interval: tuple[float, float] | None = None, basis: str = "", band: tuple[float, float] | None = None,
) -> Verdict:
    comparison, target, unit = {
        "speedup": (">=", thresholds.min_speedup, "x"),
        "memory_reduction": (">=", thresholds.min_memory_reduction, "fraction"),
        "accuracy_degradation": ("<=", thresholds.max_accuracy_degradation, "fraction"),
    }[name]
    return Verdict(name, mode, _labels(mode)[name], comparison, target, unit, measured, status, reason, interval, basis, band)


def not_evaluated(modes: tuple[str, ...], thresholds: Thresholds, reason: str) -> tuple[Verdict, ...]:
    """Every target of every AMP mode NOT_EVALUATED for one reason (e.g. the entry failed)."""
    amp_modes = [m for m in modes if m != "fp32"] or ["amp"]
    return tuple(v for mode in amp_modes for v in _all_not_evaluated(mode, thresholds, reason))


def _all_not_evaluated(mode: str, thresholds: Thresholds, reason: str) -> list[Verdict]:
    return [
        _verdict(name, mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason)
        for name in ("speedup", "memory_reduction", "accuracy_degradation")
    ]


def _missing(figure: str, baseline: ModeResult, amp: ModeResult) -> str:
    for result in (baseline, amp):
        if result.error:
            return f"{figure} not measured: {result.mode} failed: {result.error}"
    return f"{figure} not measured"


def _speedup(
    baseline: ModeResult,
    amp: ModeResult,
    thresholds: Thresholds,
    backend: str,
    overhead_bound: bool | None,
    overhead_note: str,
    overhead_hint: str,
) -> Verdict:
    measured = interval = None
    target = thresholds.min_speedup
    if baseline.step_time is not None and amp.step_time is not None:
        measured = baseline.step_time.median_ms / amp.step_time.median_ms
        interval = ratio_interval(baseline.step_time.samples_ms, amp.step_time.samples_ms)
        unstable = _unstable(baseline, amp, interval, target)
        if unstable:
            return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.UNSTABLE, unstable, interval)
    if backend != "cuda":
        # The CPU ratio is a real measurement, kept for the reader, but it is not judged.
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, CPU_REASON, interval)
    if measured is None:
        return _verdict("speedup", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, _missing("step time", baseline, amp))
    shown = f" (95% interval {interval[0]:.2f}x..{interval[1]:.2f}x)" if interval else ""
    if measured >= target:
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.PASS, f"{measured:.2f}x{shown} >= {target:g}x", interval)
    if overhead_bound:
        reason = f"workload overhead-bound: {overhead_note}; AMP speedup needs a compute-bound workload"
        if overhead_hint:
            reason += f" ({overhead_hint})"
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, reason)
    detail = f"; {overhead_note}" if overhead_note else ""
    return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.MISS, f"{measured:.2f}x{shown} < {target:g}x{detail}", interval)


def _unstable(baseline: ModeResult, amp: ModeResult, interval: tuple[float, float] | None, target: float) -> str:
    """Why the timing cannot decide (the spread exceeds the effect), or "" when it can."""
    effect = abs(baseline.step_time.median_ms - amp.step_time.median_ms)
    spread = max(baseline.step_time.iqr_ms, amp.step_time.iqr_ms)
    if spread > effect:
        return (
            f"unstable: spread exceeds the effect (IQR up to {spread:.2f} ms against a "
            f"{effect:.2f} ms difference of medians); re-run on a quieter machine or with more --repeats"
        )
    if interval is not None and interval[0] < target <= interval[1]:
        return (
            f"unstable: the 95% interval {interval[0]:.2f}x..{interval[1]:.2f}x contains the target {target:g}x; "
            "re-run with more --repeats"
        )
    return ""


def _memory(baseline: ModeResult, amp: ModeResult, thresholds: Thresholds, backend: str) -> Verdict:
    if backend != "cuda":
        splits = (baseline.memory_split, amp.memory_split)
        if all(split is not None and split.activations_other_bytes for split in splits):
            estimate = 1.0 - splits[1].activations_other_bytes / splits[0].activations_other_bytes
            reason = (
                f"{CPU_REASON}; PyTorch's memory tracker under FakeTensorMode estimates {estimate:.1%} less "
                "activation memory (an estimate, never judged)"
            )
            return _verdict("memory_reduction", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason, basis=ACTIVATIONS_BASIS)
        return _verdict("memory_reduction", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, CPU_REASON)
    if baseline.peak_memory_bytes is None or amp.peak_memory_bytes is None:
        reason = _missing("peak memory", baseline, amp)
        return _verdict("memory_reduction", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason)
    splits = (baseline.memory_split, amp.memory_split)
    if all(split is not None and not split.estimated and split.activations_other_bytes for split in splits):
        measured = 1.0 - splits[1].activations_other_bytes / splits[0].activations_other_bytes
        basis = ACTIVATIONS_BASIS
    else:
        measured = 1.0 - amp.peak_memory_bytes / baseline.peak_memory_bytes
        basis = "the whole peak (no split: the workload names no model and optimizer), which includes what AMP cannot change"
    target = thresholds.min_memory_reduction
    status = VerdictStatus.PASS if measured >= target else VerdictStatus.MISS
    sign = ">=" if status is VerdictStatus.PASS else "<"
    return _verdict("memory_reduction", amp.mode, thresholds, measured, status, f"{measured:.1%} {sign} {target:.0%} of {basis}", basis=basis)


def _accuracy(baseline: ModeResult, amp: ModeResult, thresholds: Thresholds) -> Verdict:
    """Judged on the seeded runs: each seed's FP32 and AMP runs start from the same weights and
    batches, so the per-seed differences isolate the precision and their band is the noise.
    PASS when every seed is within the target, MISS when every seed is beyond it, UNSTABLE when
    the band straddles it; one run has no band and is never judged."""
    failed = [(m.mode, run) for m in (baseline, amp) for run in m.accuracy_runs if run.error]
    if failed:
        mode, run = failed[0]
        reason = f"accuracy not measured for every seed: {mode} seed {run.seed} failed: {run.error}"
        both = baseline.accuracy is not None and amp.accuracy is not None
        measured = baseline.accuracy - amp.accuracy if both else None
        return _verdict("accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, reason)
    if baseline.accuracy is None or amp.accuracy is None:
        reason = _missing("accuracy", baseline, amp)
        if not (baseline.error or amp.error):
            reason += ": the workload reports no accuracy"
        return _verdict("accuracy_degradation", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason)
    measured = baseline.accuracy - amp.accuracy
    target = thresholds.max_accuracy_degradation
    not_judged = _without_power(baseline, amp)
    if not_judged:
        return _verdict("accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, not_judged)
    unlearned = _seeds_not_learned(baseline)
    learned = [run.seed for run in baseline.accuracy_runs if run.accuracy is not None and run.seed not in unlearned]
    if unlearned and len(learned) < 2:
        return _verdict(
            "accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED,
            f"not judged: {baseline.mode.upper()} learned the task in {len(learned)} of {len(learned) + len(unlearned)} "
            f"seeds ({_listed(unlearned, baseline)} stayed below twice chance, {_share(2 * baseline.chance_accuracy)}): "
            "the runs are at the edge of learning, so seeds differ by whether they learned, not by precision; "
            "re-run with a longer --accuracy-steps",
        )
    differences = paired_differences(baseline, amp, only=set(learned) if unlearned else None)
    band = seed_band(differences)
    shown = f"{baseline.mode.upper()} {baseline.accuracy:.4f} - {amp.mode} {amp.accuracy:.4f} = {measured:+.4f}"
    if unlearned:
        shown += f" (mean of every seed; judged on the {len(learned)} seeds {baseline.mode.upper()} learned, " \
            f"leaving out {_listed(unlearned, baseline)}, below twice chance)"
    if band is None:
        return _verdict(
            "accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED,
            f"not judged: one run, no band ({shown}): without several seeds the run-to-run spread is unknown, "
            "so the difference cannot be told from noise (seeded runs need the components form or the "
            "reference, and --accuracy-seeds 2 or more)",
        )
    low, high = band
    seeds = f"per-seed differences {low:+.4f}..{high:+.4f} over {len(differences)} seeds"
    if high <= target:
        return _verdict("accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.PASS,
                        f"{shown} <= {target:g}; {seeds}, every one within the target", band=band)
    if low > target:
        return _verdict("accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.MISS,
                        f"{shown} > {target:g}; {seeds}, every one beyond the target", band=band)
    return _verdict(
        "accuracy_degradation", amp.mode, thresholds, measured, VerdictStatus.UNSTABLE,
        f"unstable: the {seeds} straddle the target {target:g} (mean {measured:+.4f}): the seed-to-seed spread "
        "exceeds the effect; re-run with more --accuracy-seeds, or a longer --accuracy-steps so both modes converge",
        band=band,
    )


def _with_cut(verdict: Verdict, cut: str) -> Verdict:
    if not cut:
        return verdict
    return replace(verdict, reason=f"{verdict.reason}; cut by the time budget: {cut}")


def paired_differences(baseline: ModeResult, amp: ModeResult, only: set[int] | None = None) -> list[float]:
    """FP32 - AMP accuracy seed by seed, for the seeds both measured (and in `only`, if given)."""
    amp_by_seed = {run.seed: run.accuracy for run in amp.accuracy_runs if run.accuracy is not None}
    return [
        run.accuracy - amp_by_seed[run.seed]
        for run in baseline.accuracy_runs
        if run.accuracy is not None and run.seed in amp_by_seed and (only is None or run.seed in only)
    ]


def _seeds_not_learned(baseline: ModeResult) -> list[int]:
    """Seeds whose baseline run ended below twice chance. A task learned suddenly (a copy task's
    induction step) splits seeds into learned and not at a fixed run length; such a seed says
    nothing about precision, and a mean over both kinds is no reference."""
    chance = baseline.chance_accuracy
    if chance is None:
        return []
    return [run.seed for run in baseline.accuracy_runs if run.accuracy is not None and run.accuracy < 2 * chance]


def _listed(seeds: list[int], baseline: ModeResult) -> str:
    accuracy = {run.seed: run.accuracy for run in baseline.accuracy_runs}
    return ", ".join(f"seed {seed} {_share(accuracy[seed])}" for seed in seeds)


def _share(value: float) -> str:
    """An accuracy to four places, or to three significant digits below 0.01, so that a chance
    level of a large vocabulary (1/8192) is not printed as the same 0.0002 as the run below it."""
    return f"{value:.4f}" if value >= 0.01 else f"{value:.3g}"


def _without_power(baseline: ModeResult, amp: ModeResult) -> str:
    """Why comparing these accuracies says nothing about precision, or "" when it can."""
    for result in (baseline, amp):
        if result.accuracy >= SATURATED_ACCURACY:
            return (
                f"not judged: {result.mode} is saturated (accuracy {result.accuracy:.4f} >= {SATURATED_ACCURACY:g}), "
                "so a precision loss cannot show"
            )
    chance = baseline.chance_accuracy
    if chance is not None and baseline.accuracy < 2 * chance:
        return (
            f"not judged: FP32 is untrained (accuracy {_share(baseline.accuracy)} is below twice chance, {_share(2 * chance)}), "
            "so its accuracy is no reference"
        )
    runs = [(f"seed {r.seed}: ", r.train_loss_first, r.train_loss_last) for r in baseline.accuracy_runs]
    for label, first, last in runs or [("", baseline.train_loss_first, baseline.train_loss_last)]:
        if first is not None and last is not None and last >= first:
            return f"not judged: FP32 did not train ({label}loss {first:.4f} -> {last:.4f}), so its accuracy is no reference"
    return ""
