"""Severities that depend on facts known only once the heat model has resolved.

Some findings hinge on more than the heat of their own line: a list appended to every step
is only a leak when it outlives the step loop, which the heat model knows only after the
walk. A rule reports during the walk with a `DeferredSeverity`; the engine asks it for the
severity after `resolve()`.

What `decide()` may read of the heat model (`JudgementInput`): the kinds of the loops around
its place (and around places seen earlier in the same function); for code outside loops, its
function's heat and, when that function runs every step, the training facts of the functions
of its class; and whether its function's module is lent an accelerator. The table it returns
is applied at its place's heat. The project-wide pass re-analyses a file only when those inputs
changed (`HeatModel.judgement_inputs`) or the heat changed where the table reports; a judgement
that read more would go stale. A rule that names the inputs its `decide()` reads (`reads`)
spares the re-analyses that only the others would cause, and one that names the tables it can
return (`outcomes`) spares them where none of those reports at the heats involved: whatever the
new decision, no finding appears or changes there.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from verifier.findings import Heat, Severity, SeverityByHeat


class JudgementInput(enum.Enum):
    """One thing of the resolved heat that a `decide()` may read."""

    # The kinds of the loops around its place (step loop, epoch loop).
    LOOPS = "loops"
    # For code outside loops: its function's heat and, when that runs every step, the training
    # facts of the functions of its class.
    FUNCTION_HEAT = "function-heat"
    # As FUNCTION_HEAT, where only whether the function runs every step matters.
    RUNS_EVERY_STEP = "runs-every-step"
    # Whether its function's module is lent an accelerator (`FunctionFacts.accelerated`).
    DEVICE = "device"
    # Whether some call the project shows runs its function with autograd off
    # (`FunctionInfo.grad_off_caller`).
    GRAD_OFF_CALLER = "grad-off-caller"


# In declaration order, so that a stored record reads the same in every run.
EVERY_INPUT = (JudgementInput.LOOPS, JudgementInput.FUNCTION_HEAT, JudgementInput.DEVICE)


@dataclass(frozen=True)
class DeferredSeverity(SeverityByHeat):
    """`decide()` returns the severity table to apply, or None to drop the finding."""

    decide: Callable[[], SeverityByHeat | None] = field(default=lambda: None, compare=False)
    # Every table `decide()` may return, when the rule knows them; None: any table.
    outcomes: tuple[SeverityByHeat, ...] | None = field(default=None, compare=False)
    # What `decide()` reads of the resolved heat; every input unless the rule says less.
    reads: tuple[JudgementInput, ...] = field(default=EVERY_INPUT, compare=False)

    def at(self, heat: Heat) -> Severity | None:
        table = self.decide()
        return table.at(heat) if table is not None else None


def deferred(
    decide: Callable[[], SeverityByHeat | None],
    outcomes: tuple[SeverityByHeat, ...] | None = None,
    reads: tuple[JudgementInput, ...] = EVERY_INPUT,
) -> DeferredSeverity:
    """`outcomes`: the tables `decide()` returns when it does not return None, if known.
    `reads`: the inputs `decide()` reads, in `JudgementInput` order (see the module docstring)."""
    return DeferredSeverity(step=None, epoch=None, once=None, decide=decide, outcomes=outcomes, reads=reads)
