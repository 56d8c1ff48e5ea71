"""How measured numbers are written, in one place, so every format prints them the same way.

None is "not measured", never zero.
"""

from __future__ import annotations

NOT_MEASURED = "not measured"


def milliseconds(value: float | None) -> str:
    return NOT_MEASURED if value is None else f"{value:.2f} ms"


def mebibytes(value: int | float | None) -> str:
    return NOT_MEASURED if value is None else f"{value / 2**20:,.1f} MiB"


def gibibytes(value: int | float | None) -> str:
    return NOT_MEASURED if value is None else f"{value / 2**30:,.1f} GiB"


def rate(value: float | None, unit: str) -> str:
    return NOT_MEASURED if value is None else f"{value:,.0f} {unit}"


def decimal(value: float | None, places: int = 4) -> str:
    return NOT_MEASURED if value is None else f"{value:.{places}f}"


def percent(fraction: float | None, places: int = 1) -> str:
    return NOT_MEASURED if fraction is None else f"{fraction * 100:.{places}f}%"


def target_value(value: float | None, unit: str) -> str:
    """A verdict's measured or target value: ratios as `1.50x`, fractions as percentages."""
    if value is None:
        return NOT_MEASURED
    return f"{value:.2f}x" if unit == "x" else percent(value, 2)
