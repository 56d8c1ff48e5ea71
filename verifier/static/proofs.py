"""The premises the engine states for every finding: what the operation costs, and how often
the line runs; and the severity the weakest premise allows (RULES.md, "Evidence standard").

Rules state the premises only they can show (the value is on the accelerator, no `unscale_`
reaches the clip); the cost premise is the rule's match itself, and the frequency premise is read
off the heat trace and the branches on it:
- proven: the loop that makes the line hot is shown by an update, a forward or a framework hook,
  and nothing between the line and that loop can skip it (run-constant configuration is named);
- assumed: the loop's kind was inferred from weak signals, or a rate limit lies on the way;
- unknown: a branch whose test depends on the data, a cache fill or an `except` lies on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from verifier.findings import Heat, Premise, Severity, SeverityByHeat, Status, TraceStep
from verifier.static.heat import Condition, ConditionKind
from verifier.static.rule import Proof, Rule

# The order readers see premises in: cost, value, frequency, rule.
_PREMISE_ORDER = list(Premise)
_WEAKEST_FIRST = (
    ConditionKind.DATA, ConditionKind.ONCE, ConditionKind.EVAL_MODE, ConditionKind.OPT_IN, ConditionKind.THROTTLE,
    ConditionKind.EXIT,
)


def depends_on_heat(table: SeverityByHeat) -> bool:
    """A rule whose severity is the same at every heat (a GradScaler misuse) claims no frequency."""
    return len({table.at(heat) for heat in Heat}) > 1


def premises(
    rule: type[Rule],
    stated: tuple[Proof | Callable[[], Proof | None], ...],
    heat: Heat,
    table: SeverityByHeat,
    condition: Condition | None,
    trace: tuple[TraceStep, ...],
) -> tuple[Proof, ...]:
    """Every premise of a finding, in the order readers see them: cost, value, frequency, rule.
    A rule may state a premise as a callable, for what it knows only once the walk is done."""
    found = [proof for item in stated if (proof := item() if callable(item) else item) is not None]
    shown = {proof.premise for proof in found}
    if Premise.COST not in shown:
        found.append(Proof.proven(Premise.COST, rule.cost or rule.summary))
    for premise in rule.premises:
        if premise not in shown:
            found.append(Proof.assumed(premise, "not shown by the analysis"))
    if Premise.FREQUENCY not in shown and heat is not Heat.ONCE and depends_on_heat(table):
        found.append(frequency(heat, condition, trace))
    elif Premise.FREQUENCY not in shown and _opt_in(condition, trace):
        # A misuse claims no frequency, but code only an opted-in configuration reaches is not
        # what the default run does.
        found.append(frequency(heat, condition, trace))
    return tuple(sorted(found, key=lambda proof: _PREMISE_ORDER.index(proof.premise)))


def replacing(proofs: tuple[Proof, ...], proof: Proof) -> tuple[Proof, ...]:
    """`proofs` with `proof` in place of the one stating the same premise, in the readers' order."""
    kept = (proof, *(p for p in proofs if p.premise is not proof.premise))
    return tuple(sorted(kept, key=lambda p: _PREMISE_ORDER.index(p.premise)))


def _opt_in(condition: Condition | None, trace: tuple[TraceStep, ...]) -> bool:
    return (condition is not None and condition.kind is ConditionKind.OPT_IN) or any(
        step.branch_kind == "opt_in" for step in trace
    )


def worth_reporting(proofs: Iterable[Proof], reports_unknown: bool = True) -> bool:
    """Whether a finding rests on anything shown: one whose cost is itself only assumed (a barrier
    costs nothing on one process) and whose line is not known to run often says nothing. The
    judged real code agrees: every such barrier was wrong (checkpoint and exit paths, one-shot
    branches). A rule that does not report on unknown premises (`Rule.reports_unknown`) drops
    every finding with one."""
    statuses = {proof.premise: proof.status for proof in proofs}
    if not reports_unknown and Status.UNKNOWN in statuses.values():
        return False
    return not (
        statuses.get(Premise.COST) in (Status.ASSUMED, Status.UNKNOWN)
        and statuses.get(Premise.FREQUENCY) is Status.UNKNOWN
    )


def allowed(severity: Severity, proofs: Iterable[Proof]) -> Severity:
    """`severity`, capped by the weakest premise (assumed: MEDIUM, unknown: LOW)."""
    return min([severity, *(proof.status.cap for proof in proofs)])


def frequency(heat: Heat, condition: Condition | None, trace: tuple[TraceStep, ...]) -> Proof:
    """Whether the line runs as often as `heat` says, from its trace and the branches on it."""
    branches = [(condition.kind, condition.text, condition.node, "", 0)] if condition is not None else []
    branches += [
        (ConditionKind[step.branch_kind.upper()], step.branch, None, step.path, step.line)
        for step in trace if step.branch_kind
    ]
    for weak in _WEAKEST_FIRST:
        for kind, text, node, path, line in branches:
            if kind is weak:
                return _skippable(kind, text, node, path, line, heat)
    settings = [text for kind, text, *_ in branches if kind is ConditionKind.CONSTANT]
    named = "; when " + " and ".join(f"`{text}` holds (run-constant)" for text in settings) if settings else ""
    last = trace[-1] if trace else None
    if last is None:
        return Proof.assumed(Premise.FREQUENCY, f"runs {heat.often}: no loop or caller shown{named}")
    if last.inferred:
        kind, _, why = last.what.partition(": ")
        return Proof.assumed(
            Premise.FREQUENCY, f"runs {heat.often} if the {kind} is one ({why}){named}", path=last.path, line=last.line
        )
    return Proof.proven(Premise.FREQUENCY, f"runs {heat.often}: {_loop_words(last)}{named}", path=last.path, line=last.line)


def _skippable(kind: ConditionKind, text: str, node, path: str, line: int, heat: Heat) -> Proof:
    at = " at the call" if path else ""
    if kind is ConditionKind.THROTTLE:
        return Proof.assumed(
            Premise.FREQUENCY, f"runs only when `{text}` holds{at}, a rate limit: not {heat.often}", node, path, line
        )
    if kind is ConditionKind.EXIT:
        return Proof.assumed(
            Premise.FREQUENCY,
            f"runs {heat.often} unless an early exit is taken first (it runs when `{text}` holds{at})", node, path, line,
        )
    if kind is ConditionKind.OPT_IN:
        return Proof.unknown(
            Premise.FREQUENCY,
            f"runs only when `{text}` holds{at}, which the defaults leave false (the configuration's, the constructor's where nothing in the project passes another value, or what every call in the project passes): an opt-in setting",
            node, path, line,
        )
    if kind is ConditionKind.EVAL_MODE:
        return Proof.unknown(
            Premise.FREQUENCY,
            f"runs only when `{text}` holds{at}, in evaluation mode: a training step runs the model in training mode",
            node, path, line,
        )
    if kind is ConditionKind.ONCE:
        return Proof.unknown(
            Premise.FREQUENCY, f"runs only when `{text}` holds{at}, which fills a cache: once, not {heat.often}",
            node, path, line,
        )
    return Proof.unknown(
        Premise.FREQUENCY,
        f"runs only when `{text}` holds{at}, which depends on the data: how often is not known",
        node, path, line,
    )


def _loop_words(step: TraceStep) -> str:
    """`the step loop (iterates train_loader, calls optimizer.step())`; the evidence names its line."""
    if not step.is_loop:
        return step.what
    kind, _, why = step.what.partition(": ")
    return f"the {kind} ({why})"
