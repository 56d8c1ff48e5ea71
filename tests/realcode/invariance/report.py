"""The invariance figures: overall, per rewrite kind, per repository, and every failing pair.

Plain text for people, a JSON document for the slow test and for comparing builds. The bar is
issue 23's acceptance figure.
"""

from __future__ import annotations

import collections
from typing import TextIO

from tests.realcode.invariance.compare import Verdict
from tests.realcode.invariance.kinds import KINDS
from tests.realcode.invariance.runner import Results

INVARIANCE_BAR = 0.99


def _ratio(good: int, total: int) -> float | None:
    return good / total if total else None


def _fmt(good: int, total: int) -> str:
    return f"{good}/{total} = {good / total:.3f}" if total else "n/a"


def _tally(verdicts: list[Verdict], key) -> dict:
    counts: dict = collections.defaultdict(lambda: [0, 0])
    for verdict in verdicts:
        cell = counts[key(verdict)]
        cell[0] += verdict.holds
        cell[1] += 1
    return counts


def summary(results: Results) -> dict:
    preserving = [v for v in results.verdicts if v.preserving]
    changing = [v for v in results.verdicts if not v.preserving]
    judged = [p for v in changing for p in v.probes if p.changed is not None]
    invariant = sum(v.holds for v in preserving)
    kept = sum(v.kept for v in preserving)
    compared = sum(v.compared for v in preserving)

    def rows(counts: dict) -> dict:
        return {k: {"holds": h, "total": t, "rate": _ratio(h, t)} for k, (h, t) in counts.items()}

    return {
        "pairs": len(preserving),
        "invariant": invariant,
        "invariance": _ratio(invariant, len(preserving)),
        "findings_compared": compared,
        "findings_kept": kept,
        "by_kind": rows(_tally(results.verdicts, lambda v: v.kind)),
        "by_repo": rows(_tally(preserving, lambda v: v.repo)),
        "changing_pairs": len(changing),
        "changing_pairs_as_stated": sum(v.holds for v in changing),
        "changing_probes_judged": len(judged),
        "changing_probes_as_stated": sum(p.changed for p in judged),
        "skipped": len(results.skipped),
        "errors": len(results.errors),
        "runs": results.runs,
        "bar": INVARIANCE_BAR,
    }


def print_report(results: Results, out: TextIO) -> None:
    p = lambda text="": print(text, file=out)
    verdicts = results.verdicts
    preserving = [v for v in verdicts if v.preserving]
    changing = [v for v in verdicts if not v.preserving]
    by_kind = _tally(verdicts, lambda v: v.kind)
    skipped = collections.Counter(kind for _, kind, _ in results.skipped)

    p("== behaviour-preserving rewrites: invariant pairs per kind (findings kept/compared)")
    for kind in KINDS:
        if not kind.preserving:
            continue
        mine = [v for v in preserving if v.kind == kind.name]
        holds, total = by_kind.get(kind.name, (0, 0))
        kept, compared = sum(v.kept for v in mine), sum(v.compared for v in mine)
        p(f"{kind.name:22} {_fmt(holds, total):18} findings {kept}/{compared}   not applicable {skipped[kind.name]}")
    p()
    p("== behaviour-preserving rewrites per repository")
    for repo, (holds, total) in sorted(_tally(preserving, lambda v: v.repo).items()):
        p(f"{repo:42} {_fmt(holds, total)}")
    p()
    p("== behaviour-changing rewrites: probes whose finding changed as stated (pairs where all did)")
    for kind in KINDS:
        if kind.preserving:
            continue
        mine = [v for v in changing if v.kind == kind.name]
        judged = [pr for v in mine for pr in v.probes if pr.changed is not None]
        unfound = sum(pr.changed is None for v in mine for pr in v.probes)
        holds, total = by_kind.get(kind.name, (0, 0))
        p(f"{kind.name:22} probes {_fmt(sum(pr.changed for pr in judged), len(judged)):18} "
          f"pairs {_fmt(holds, total):18} probes not found before {unfound}")
    p()
    tally = collections.Counter((v.kind, c.side, c.code, c.severity) for v in preserving for c in v.changes)
    if tally:
        p("== findings that changed through behaviour-preserving rewrites, by kind, rule and severity")
        for (kind, side, code, severity), n in sorted(tally.items()):
            p(f"{kind:22} {side:6} {code} {severity:8} {n}")
        p()
    failing = [v for v in verdicts if not v.holds]
    p(f"== pairs that do not hold ({len(failing)})")
    for v in sorted(failing, key=lambda v: ([k.name for k in KINDS].index(v.kind), v.label)):
        p(f"-- {v.label} | {v.kind} | {v.note}")
        for change in v.changes if v.preserving else []:
            p(f"     {change.describe()}")
        for judgement in v.probes:
            if judgement.changed is False:
                p(f"     probe {judgement.probe} at {judgement.path}:{judgement.line}: {judgement.before} -> {judgement.after}")
        if not v.preserving and not any(pr.changed is not None for pr in v.probes):
            p("     no probe had a finding before the rewrite")
    side = [v for v in changing if v.changes]
    if side:
        p()
        p(f"== behaviour-changing pairs whose other findings changed too ({len(side)}; reported, not judged)")
        for v in side:
            p(f"-- {v.label} | {v.kind}")
            for change in v.changes:
                p(f"     {change.describe()}")
    elsewhere = [v for v in verdicts if v.elsewhere]
    if elsewhere:
        p()
        p(f"== pairs whose findings changed in files the rewrite did not touch ({len(elsewhere)}; not in the rate)")
        for v in elsewhere:
            p(f"-- {v.label} | {v.kind}: " + "; ".join(c.describe() for c in v.elsewhere[:6]))
    if results.errors:
        p()
        p(f"== errors ({len(results.errors)})")
        for label, kind, error in results.errors:
            p(f"  {label} {kind}: {error}")
    p()
    p("not applicable: " + ", ".join(f"{kind} {n}" for kind, n in sorted(skipped.items())))
    invariant = sum(v.holds for v in preserving)
    kept, compared = sum(v.kept for v in preserving), sum(v.compared for v in preserving)
    p(f"findings kept through behaviour-preserving rewrites: {_fmt(kept, compared)}")
    p(f"== overall invariance {_fmt(invariant, len(preserving))} (bar {INVARIANCE_BAR:.2f}); "
      f"behaviour-changing pairs as stated {_fmt(sum(v.holds for v in changing), len(changing))}")
