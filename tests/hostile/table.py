"""The sweep's summary: per category, how many cases ran and passed, and how many failed by
each kind of harm (a case counts once per kind it shows)."""

from __future__ import annotations

from collections.abc import Iterable

from tests.hostile.runner import KINDS, Outcome

HEADER = ("category", "cases", "passed", *KINDS)


def rows(outcomes: Iterable[Outcome]) -> list[tuple]:
    by_category: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_category.setdefault(outcome.case.category, []).append(outcome)
    table = [_row(name, group) for name, group in by_category.items()]
    every = [o for group in by_category.values() for o in group]
    return [*table, _row("total", every)]


def _row(name: str, group: list[Outcome]) -> tuple:
    kinds = [sum(any(kind == k for k, _ in o.failures) for o in group) for kind in KINDS]
    return (name, len(group), sum(o.passed for o in group), *kinds)


def markdown(outcomes: Iterable[Outcome]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows(outcomes)]
    return "\n".join(lines)
