"""The shape every rule shares: metadata, a visitor over the engine's single walk, examples.

A rule subclasses `Rule`, declares `visit_<Node>` / `leave_<Node>` methods for the libcst node
types it cares about, and calls `self.report(node, message)`. Heat, severity, suppression
comments and positions are applied centrally by the engine after the walk, so rules never
deal with loops, comments or line numbers themselves. A rule that can repair what it found
passes `autofix=self.offer_fix(node, replacement, title)`; `--fix` applies it (`verifier.fixes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat, Status, TraceStep
from verifier.static.autofix import Fix

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext
    from verifier.static.heat import Condition, Where


@dataclass(frozen=True)
class Invalid:
    """An example that must produce exactly one finding of the rule at `line` (1-based). For a
    rule that offers fixes, `fixed` is the example once its fix is applied (None: no fix offered)."""

    code: str
    line: int
    severity: Severity
    fixed: str | None = None


@dataclass(frozen=True, eq=False)
class Proof:
    """A premise as a rule states it during the walk; `node` (the code that shows it) is turned
    into a line once positions are known. See `verifier.findings.Evidence`."""

    premise: Premise
    status: Status
    text: str
    node: cst.CSTNode | None = None
    # Where the evidence lies when it is not a node of this module (a step of the heat trace).
    path: str = ""
    line: int = 0

    @classmethod
    def proven(
        cls, premise: Premise, text: str, node: cst.CSTNode | None = None, path: str = "", line: int = 0
    ) -> Proof:
        return cls(premise, Status.PROVEN, text, node, path, line)

    @classmethod
    def assumed(
        cls, premise: Premise, text: str, node: cst.CSTNode | None = None, path: str = "", line: int = 0
    ) -> Proof:
        return cls(premise, Status.ASSUMED, text, node, path, line)

    @classmethod
    def unknown(
        cls, premise: Premise, text: str, node: cst.CSTNode | None = None, path: str = "", line: int = 0
    ) -> Proof:
        return cls(premise, Status.UNKNOWN, text, node, path, line)


@dataclass(eq=False)
class Candidate:
    """A finding before the heat is known; the engine turns it into a `Finding` or drops it."""

    rule: type[Rule]
    node: cst.CSTNode
    where: Where
    message: str
    severity: SeverityByHeat
    fix: str
    # The premises the rule showed (value, its own premise), or callables giving one once the walk
    # is done; cost and frequency are added by the engine where the rule does not state them.
    evidence: tuple[Proof | Callable[[], Proof | None], ...] = ()
    # The branch the node runs under in its function (`conditions.py`): part of its frequency.
    condition: Condition | None = None
    # The repair the rule offers, if any (`--fix`).
    autofix: Fix | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    severity: ClassVar[SeverityByHeat]
    summary: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    use_instead: ClassVar[str]
    fix: ClassVar[str]
    # What `--fix` changes for this rule's findings, in one sentence ("" when it offers no fix),
    # and whether that change keeps behaviour: safe fixes are applied by `--fix`, unsafe ones only
    # with `--unsafe-fixes` too. Every fix the rule offers has this safety (`offer_fix`).
    autofix: ClassVar[str] = ""
    autofix_safe: ClassVar[bool] = False
    # What the flagged operation costs, in one clause: the cost premise, proven by the match itself
    # unless a finding states otherwise (`a host read that waits for the device's queue`).
    cost: ClassVar[str] = ""
    # Premises beyond cost and frequency that every finding of the rule rests on: a finding that
    # does not show one has it as assumed ("not shown"), so a rule cannot block by forgetting one.
    premises: ClassVar[tuple[Premise, ...]] = ()
    references: ClassVar[tuple[str, ...]] = ()
    # A preview rule has not yet reached lenient precision 0.95 on real code: it runs only when
    # preview is enabled (`--preview`, `preview = true`), as ruff's preview rules do.
    preview: ClassVar[bool] = False
    # False for a rule whose findings resting on an unknown premise (a branch that depends on the
    # data) were wrong on real code: those are not reported at all rather than LOW.
    reports_unknown: ClassVar[bool] = True
    # Codes whose finding at the same node this rule's finding replaces (one call, one finding).
    supersedes: ClassVar[tuple[str, ...]] = ()
    # Text without any of these cannot produce this rule's finding: the rule skips the file, and
    # a file that mentions no rule's tokens is not even parsed. Every rule states its own.
    tokens: ClassVar[tuple[str, ...]]
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    @classmethod
    def reports_through(cls, trace: tuple[TraceStep, ...]) -> bool:
        """Whether a finding whose heat comes through these call sites is reported: a rule that
        leaves some branches alone in its own walk leaves the same branches alone at a call."""
        return True

    @classmethod
    def capped_through(cls, trace: tuple[TraceStep, ...]) -> tuple[Severity, Proof] | None:
        """The most a finding whose heat comes through these call sites may report, and the
        premise that says why; None when the call sites change nothing. A rule that reads its own
        loop's body reads the callers' loops the same way, through what the trace carries."""
        return None

    def __init__(self, context: ModuleContext) -> None:
        self.context = context
        # This file's reports, in the order made; the engine judges them once the walk is done.
        self.candidates: list[Candidate] = []

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        where: Where | None = None,
        severity: SeverityByHeat | None = None,
        fix: str | None = None,
        evidence: tuple[Proof | Callable[[], Proof | None], ...] = (),
        condition: Condition | None = None,
        autofix: Fix | None = None,
    ) -> None:
        """Report `node`. Pass `where` (and the `condition` captured with it) when reporting
        later than the node was visited, the premises shown (`Proof`) when the rule's
        finding rests on more than its match, and `autofix` when the rule can repair it."""
        self.candidates.append(
            Candidate(
                rule=type(self),
                node=node,
                where=where if where is not None else self.context.heat.where(),
                message=message,
                severity=severity or self.severity,
                fix=fix if fix is not None else self.fix,
                evidence=tuple(evidence),
                condition=(condition or where.condition) if where is not None else self.context.condition_probe(),
                autofix=autofix,
            )
        )

    def offer_fix(self, node: cst.BaseExpression, replacement: cst.BaseExpression, title: str) -> Fix:
        """A fix replacing `node` with `replacement`, as safe as the rule's `autofix_safe` says."""
        if not type(self).autofix:
            raise TypeError(f"{type(self).__name__} offers a fix but does not document it (`autofix`)")
        return Fix(node, replacement, title, type(self).autofix_safe)
