"""Severities that depend on facts known only once the heat model has resolved.

Some findings hinge on more than the heat of their own line: a list appended to every step
is only a leak when it outlives the step loop, which the heat model knows only after the
walk. A rule reports during the walk with a `DeferredSeverity`; the engine asks it for the
severity after `resolve()`.

What `decide()` may read of the heat model: the kinds of the loops around its place (and
around places seen earlier in the same function) and, for code outside loops, its function's
heat and, when that function runs every step, the training facts of the functions of its
class. The table it returns is applied at its place's heat. The project-wide pass re-analyses
a file only when those inputs changed (`HeatModel.judgement_inputs`) or the heat changed where
the table reports; a judgement that read more would go stale. A rule that names the tables
`decide()` can return (`outcomes`) spares that re-analysis where none of them reports at the
heats involved: whatever the new decision, no finding appears or changes there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.findings import Heat, Severity, SeverityByHeat


@dataclass(frozen=True)
class DeferredSeverity(SeverityByHeat):
    """`decide()` returns the severity table to apply, or None to drop the finding."""

    decide: Callable[[], SeverityByHeat | None] = field(default=lambda: None, compare=False)
    # Every table `decide()` may return, when the rule knows them; None: any table.
    outcomes: tuple[SeverityByHeat, ...] | None = field(default=None, compare=False)

    def at(self, heat: Heat) -> Severity | None:
        table = self.decide()
        return table.at(heat) if table is not None else None


def deferred(
    decide: Callable[[], SeverityByHeat | None], outcomes: tuple[SeverityByHeat, ...] | None = None
) -> DeferredSeverity:
    """`outcomes`: the tables `decide()` returns when it does not return None, if known."""
    return DeferredSeverity(step=None, epoch=None, once=None, decide=decide, outcomes=outcomes)
