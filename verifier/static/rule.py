"""The shape every rule shares: metadata, a visitor over the engine's single walk, examples.

A rule subclasses `Rule`, declares `visit_<Node>` / `leave_<Node>` methods for the libcst node
types it cares about, and calls `self.report(node, message)`. Heat, severity, suppression
comments and positions are applied centrally by the engine after the walk, so rules never
deal with loops, comments or line numbers themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat, Status

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext
    from verifier.static.heat import Condition, Where


@dataclass(frozen=True)
class Invalid:
    """An example that must produce exactly one finding of the rule at `line` (1-based)."""

    code: str
    line: int
    severity: Severity


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
    # Codes whose finding at the same node this rule's finding replaces (one call, one finding).
    supersedes: ClassVar[tuple[str, ...]] = ()
    # Text without any of these cannot produce this rule's finding: the rule skips the file, and
    # a file that mentions no rule's tokens is not even parsed. Every rule states its own.
    tokens: ClassVar[tuple[str, ...]]
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

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
    ) -> None:
        """Report `node`. Pass `where` (and the `condition` captured with it) when reporting
        later than the node was visited, and the premises shown (`Proof`) when the rule's
        finding rests on more than its match."""
        self.candidates.append(
            Candidate(
                rule=type(self),
                node=node,
                where=where if where is not None else self.context.heat.where(),
                message=message,
                severity=severity or self.severity,
                fix=fix if fix is not None else self.fix,
                evidence=tuple(evidence),
                condition=condition if where is not None else self.context.condition_probe(),
            )
        )
