"""Judges each AMP mode against the FP32 baseline: speedup, peak-memory reduction and
accuracy degradation. PASS and MISS need a measured value; everything else is
NOT_EVALUATED with the reason, so a figure that was not measured never reads as passed."""

from __future__ import annotations

from verifier.dynamic.results import ModeResult, Thresholds, Verdict, VerdictStatus

CPU_REASON = "not evaluated on CPU: speed and memory targets are judged on a CUDA device"


def judge(
    modes: tuple[ModeResult, ...],
    thresholds: Thresholds,
    backend: str,
    overhead_bound: bool | None,
    overhead_note: str,
    overhead_hint: str = "",
) -> tuple[Verdict, ...]:
    baseline = next((m for m in modes if m.mode == "fp32"), None)
    amp_modes = [m for m in modes if m.mode != "fp32"]
    if not amp_modes:
        return tuple(_all_not_evaluated("amp", thresholds, "no AMP mode was run"))
    verdicts: list[Verdict] = []
    for amp in amp_modes:
        if baseline is None:
            verdicts += _all_not_evaluated(amp.mode, thresholds, "the FP32 baseline was not run")
            continue
        verdicts.append(_speedup(baseline, amp, thresholds, backend, overhead_bound, overhead_note, overhead_hint))
        verdicts.append(_memory(baseline, amp, thresholds, backend))
        verdicts.append(_accuracy(baseline, amp, thresholds))
    return tuple(verdicts)


def _labels(mode: str) -> dict[str, str]:
    return {
        "speedup": f"AMP speedup over FP32 ({mode})",
        "memory_reduction": f"Peak-memory reduction vs FP32 ({mode})",
        "accuracy_degradation": f"Accuracy degradation vs FP32 ({mode})",
    }


def _verdict(name: str, mode: str, thresholds: Thresholds, measured: float | None, status: VerdictStatus, reason: str) -> Verdict:
    comparison, target, unit = {
        "speedup": (">=", thresholds.min_speedup, "x"),
        "memory_reduction": (">=", thresholds.min_memory_reduction, "fraction"),
        "accuracy_degradation": ("<=", thresholds.max_accuracy_degradation, "fraction"),
    }[name]
    return Verdict(name, mode, _labels(mode)[name], comparison, target, unit, measured, status, reason)


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
    measured = None
    if baseline.step_time is not None and amp.step_time is not None:
        measured = baseline.step_time.median_ms / amp.step_time.median_ms
    if backend != "cuda":
        # The CPU ratio is a real measurement, kept for the reader, but it is not judged.
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, CPU_REASON)
    if measured is None:
        return _verdict("speedup", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, _missing("step time", baseline, amp))
    target = thresholds.min_speedup
    if measured >= target:
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.PASS, f"{measured:.2f}x >= {target:g}x")
    if overhead_bound:
        reason = f"workload overhead-bound: {overhead_note}; AMP speedup needs a compute-bound workload"
        if overhead_hint:
            reason += f" ({overhead_hint})"
        return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.NOT_EVALUATED, reason)
    detail = f"; {overhead_note}" if overhead_note else ""
    return _verdict("speedup", amp.mode, thresholds, measured, VerdictStatus.MISS, f"{measured:.2f}x < {target:g}x{detail}")


def _memory(baseline: ModeResult, amp: ModeResult, thresholds: Thresholds, backend: str) -> Verdict:
    if backend != "cuda":
        return _verdict("memory_reduction", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, CPU_REASON)
    if baseline.peak_memory_bytes is None or amp.peak_memory_bytes is None:
        reason = _missing("peak memory", baseline, amp)
        return _verdict("memory_reduction", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason)
    measured = 1.0 - amp.peak_memory_bytes / baseline.peak_memory_bytes
    target = thresholds.min_memory_reduction
    status = VerdictStatus.PASS if measured >= target else VerdictStatus.MISS
    sign = ">=" if status is VerdictStatus.PASS else "<"
    return _verdict("memory_reduction", amp.mode, thresholds, measured, status, f"{measured:.1%} {sign} {target:.0%}")


def _accuracy(baseline: ModeResult, amp: ModeResult, thresholds: Thresholds) -> Verdict:
    if baseline.accuracy is None or amp.accuracy is None:
        reason = _missing("accuracy", baseline, amp)
        if not (baseline.error or amp.error):
            reason += ": the workload reports no accuracy"
        return _verdict("accuracy_degradation", amp.mode, thresholds, None, VerdictStatus.NOT_EVALUATED, reason)
    measured = baseline.accuracy - amp.accuracy
    target = thresholds.max_accuracy_degradation
    status = VerdictStatus.PASS if measured <= target else VerdictStatus.MISS
    sign = "<=" if status is VerdictStatus.PASS else ">"
    return _verdict(
        "accuracy_degradation",
        amp.mode,
        thresholds,
        measured,
        status,
        f"FP32 {baseline.accuracy:.4f} - {amp.mode} {amp.accuracy:.4f} = {measured:+.4f} {sign} {target:g}",
    )
