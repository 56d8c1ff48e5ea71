"""Bootstrap intervals for step times and seed bands for accuracies (pure Python: the report
reads them without torch)."""

from __future__ import annotations

import random
import statistics


def ratio_interval(numerator_ms: tuple[float, ...], denominator_ms: tuple[float, ...], rounds: int = 2000) -> tuple[float, float] | None:
    """95 % bootstrap interval of median(numerator) / median(denominator), resampling each
    mode's repeats; seeded, so the same samples give the same interval. None below 2 samples each."""
    if len(numerator_ms) < 2 or len(denominator_ms) < 2:
        return None
    draw = random.Random(0)
    ratios = sorted(
        statistics.median(draw.choices(numerator_ms, k=len(numerator_ms)))
        / statistics.median(draw.choices(denominator_ms, k=len(denominator_ms)))
        for _ in range(rounds)
    )
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]


def median_interval(samples_ms: tuple[float, ...], rounds: int = 2000) -> tuple[float, float] | None:
    """95 % bootstrap interval of the median of one mode's repeats (seeded); None below 2 samples."""
    if len(samples_ms) < 2:
        return None
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(samples_ms, k=len(samples_ms))) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def seed_band(values: list[float]) -> tuple[float, float] | None:
    """(lowest, highest) of per-seed values; None below two, where there is no spread to see."""
    return (min(values), max(values)) if len(values) >= 2 else None
