"""Everything one run produced, assembled once; every output format renders this same object."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from verifier import __version__
from verifier.config import Settings
from verifier.dynamic.results import DynamicResult
from verifier.findings import Finding
from verifier.report.baseline import BaselineComparison, fingerprints
from verifier.report.decision import Decision, Policy, decide
from verifier.report.evidence import join_runtime_evidence
from verifier.report.scoring import Scorecard, checked_categories, score

NOT_REQUESTED = "not run: `--dynamic` was not requested"
UNANALYSABLE_CODE = "VP900"


def nothing_analysed(scorecard: Scorecard, files: int) -> Scorecard:
    """No score for a run that analysed nothing: never a silent 100/100."""
    why = "no Python files found" if not files else (
        "the one file could not be analysed" if files == 1 else f"none of the {files} files could be analysed"
    )
    categories = tuple(replace(c, scored=False, points=Fraction(0), note="nothing was analysed") for c in scorecard.categories)
    return Scorecard(None, categories, not_scored=f"nothing was analysed: {why}")


@dataclass(frozen=True)
class RunInfo:
    """What was asked: enough to title the report and to reproduce it."""

    task: str
    date: str
    paths: tuple[str, ...]
    command: str
    diff_base: str | None = None
    config_path: str | None = None
    report_path: str | None = None
    # SARIF `automationDetails.id`, only when asked (`--sarif-category`).
    sarif_category: str | None = None


@dataclass(frozen=True)
class Fixes:
    """How this run treats the fixes findings offer: whether unsafe ones count (`--unsafe-fixes`),
    whether `--fix` applied them and which findings it fixed (as first reported), and whether to
    list them (`--show-fixes`)."""

    unsafe: bool = False
    applied: bool = False
    fixed: tuple[Finding, ...] = ()
    show: bool = False

    def applies_to(self, finding: Finding) -> bool:
        """`--fix` would change this finding's code in this run: it is marked `[*]`."""
        return finding.autofix is not None and finding.autofix.applies(self.unsafe)


@dataclass(frozen=True)
class Report:
    run: RunInfo
    files: tuple[str, ...]
    findings: tuple[Finding, ...]
    fingerprints: dict[Finding, str]
    scorecard: Scorecard
    decision: Decision
    policy: Policy
    dynamic: DynamicResult | None
    dynamic_note: str
    baseline: BaselineComparison | None
    rules: tuple[str, ...] = ()
    version: str = __version__
    # Files the heat was computed over (the project); `files` are the ones reported.
    heat_files: int = 0
    # Findings a suppression comment silenced: shown as a count (and in SARIF as suppressed results).
    suppressed: tuple[Finding, ...] = ()
    fixes: Fixes = Fixes()

    @property
    def unanalysable_files(self) -> int:
        """Files that could not be analysed (a VP900 finding: unreadable, too large, timed out)."""
        return len(unanalysable_paths(self.findings) & set(self.files))


def unanalysable_paths(findings) -> set[str]:
    return {f.path for f in findings if f.code == UNANALYSABLE_CODE}


def build_report(
    run: RunInfo,
    files: list[str],
    findings: list[Finding],
    settings: Settings,
    *,
    dynamic: DynamicResult | None = None,
    dynamic_note: str = NOT_REQUESTED,
    baseline: BaselineComparison | None = None,
    heat_files: int | None = None,
    suppressed: list[Finding] = (),
    fixes: Fixes = Fixes(),
) -> Report:
    ordered = sorted(join_runtime_evidence(findings, dynamic))
    policy = Policy(settings.block_on, settings.min_score, settings.block_on_new_only)
    rules = settings.selected_rules()
    checked = checked_categories(rules)
    scorecard = score(ordered, dynamic, dynamic_note, checked)
    scorecard = replace(scorecard, proven_total=score([f for f in ordered if f.proven], dynamic, dynamic_note, checked).total)
    unanalysable = unanalysable_paths(ordered)
    if not any(path not in unanalysable for path in files):
        scorecard = nothing_analysed(scorecard, len(files))
    decision = decide(
        ordered,
        policy,
        score=scorecard.deciding_total,
        score_label="score" if scorecard.deciding_total == scorecard.total else "score over the proven findings",
        dynamic=dynamic,
        new_findings=baseline.new if baseline is not None else None,
        baseline_score=baseline.comparable_score if baseline is not None else None,
    )
    return Report(
        run=run,
        files=tuple(files),
        findings=tuple(ordered),
        # Suppressed findings are fingerprinted on their own: they never shift a reported one's occurrence.
        fingerprints={**fingerprints(suppressed), **fingerprints(ordered)},
        scorecard=scorecard,
        decision=decision,
        policy=policy,
        dynamic=dynamic,
        dynamic_note="" if dynamic is not None else dynamic_note,
        baseline=baseline,
        rules=tuple(rule.code for rule in rules),
        heat_files=len(files) if heat_files is None else heat_files,
        suppressed=tuple(sorted(suppressed)),
        fixes=fixes,
    )
