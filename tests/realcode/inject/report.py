"""Recall tables of an injection run: probe x path kind, per repository, overall, and misses.

Plain text for people and a JSON document for the slow test and for comparing builds. The
bars are issue 23's acceptance figures.
"""

from __future__ import annotations

import collections
from typing import TextIO

from tests.realcode.inject.path_kinds import KINDS
from tests.realcode.inject.probes import PROBES
from tests.realcode.inject.runner import Results

OVERALL_BAR = 0.95
PATH_KIND_BAR = 0.90
COLUMN = {
    "inline": "inline", "helper_module": "module", "self_method": "self", "local_instance": "inst", "instance_at_call": "new-inst",
    "init_attribute": "init", "inherited_method": "base", "model_parameter": "model",
    "callback_argument": "cb-arg", "callback_list": "cb-list", "functools_partial": "partial",
    "lambda": "lambda", "decorator": "decor", "context_manager": "ctx", "alias": "alias",
    "getattr_literal": "getattr",
}


def _tally(outcomes, key) -> dict:
    counts: dict = collections.defaultdict(lambda: [0, 0])
    for outcome in outcomes:
        cell = counts[key(outcome)]
        cell[0] += outcome.found
        cell[1] += 1
    return counts


def _ratio(found: int, total: int) -> float | None:
    return found / total if total else None


def _fmt(found: int, total: int) -> str:
    ratio = _ratio(found, total)
    return f"{found}/{total} = {ratio:.3f}" if ratio is not None else "n/a"


def summary(results: Results) -> dict:
    """The figures the slow test checks, as plain data."""
    outcomes = results.outcomes
    found = sum(o.found for o in outcomes)
    by_kind = _tally(outcomes, lambda o: o.kind)
    by_probe = _tally(outcomes, lambda o: o.probe)
    by_repo = _tally(outcomes, lambda o: o.repo)
    cells = _tally(outcomes, lambda o: (o.probe, o.kind))
    return {
        "found": found,
        "total": len(outcomes),
        "recall": _ratio(found, len(outcomes)),
        "by_kind": {k: {"found": f, "total": t, "recall": _ratio(f, t)} for k, (f, t) in by_kind.items()},
        "by_probe": {k: {"found": f, "total": t, "recall": _ratio(f, t)} for k, (f, t) in by_probe.items()},
        "by_repo": {k: {"found": f, "total": t, "recall": _ratio(f, t)} for k, (f, t) in by_repo.items()},
        "cells": {f"{p}|{k}": {"found": f, "total": t} for (p, k), (f, t) in cells.items()},
        "severities": dict(collections.Counter(o.severity for o in outcomes if o.found)),
        "bars": {"overall": OVERALL_BAR, "per_path_kind": PATH_KIND_BAR},
    }


def print_report(results: Results, out: TextIO) -> None:
    p = lambda text="": print(text, file=out)
    outcomes = results.outcomes
    kinds = [k for k in KINDS if any(o.kind == k for o in outcomes)]
    cells = _tally(outcomes, lambda o: (o.probe, o.kind))
    by_kind = _tally(outcomes, lambda o: o.kind)
    by_probe = _tally(outcomes, lambda o: o.probe)

    p("== recall per probe x path kind (found/injected, summed over the training loops)")
    p(f"{'probe':22}" + "".join(f"{COLUMN[k]:>8}" for k in kinds) + f"{'all':>14}")
    for probe in PROBES:
        if probe.name not in by_probe:
            continue
        row = "".join(f"{'%d/%d' % tuple(cells[(probe.name, k)]) if (probe.name, k) in cells else '-':>8}" for k in kinds)
        f, t = by_probe[probe.name]
        p(f"{probe.name:22}{row}{f'{f}/{t} {f / t:.2f}':>14}")
    p(f"{'all':22}" + "".join(f"{by_kind[k][0] / by_kind[k][1]:>8.2f}" for k in kinds))
    p("columns: " + ", ".join(f"{COLUMN[k]}={k}" for k in kinds))
    p()
    p("== recall per path kind (bar %.2f)" % PATH_KIND_BAR)
    for kind in kinds:
        f, t = by_kind[kind]
        p(f"{kind:20} {_fmt(f, t)}{'' if f / t >= PATH_KIND_BAR else '  below bar'}")
    p()
    p("== recall per repository")
    for repo, (f, t) in sorted(_tally(outcomes, lambda o: o.repo).items()):
        p(f"{repo:42} {_fmt(f, t)}")
    p()
    p("== recall per training loop")
    for target, (f, t) in _tally(outcomes, lambda o: o.target).items():
        p(f"{target:72} {_fmt(f, t)}")
    p()
    found = sum(o.found for o in outcomes)
    severities = collections.Counter(o.severity for o in outcomes if o.found)
    p("severity of the findings that found a probe: " +
      ", ".join(f"{s} {severities[s]}" for s in ("CRITICAL", "HIGH", "MEDIUM", "LOW", "INFO") if severities[s]))
    skipped = collections.Counter(kind for _, kind in results.skipped)
    if skipped:
        p("path kinds that do not apply (the loop is not in a method, or its class has no __init__): " +
          ", ".join(f"{kind} on {n} loops" for kind, n in sorted(skipped.items())))
    if results.errors:
        p(f"== errors ({len(results.errors)})")
        for (target, kind), error in sorted(results.errors.items()):
            p(f"  {target} {kind}: {error}")
    p()
    misses = [o for o in outcomes if not o.found]
    reasons = collections.Counter(o.reason.split(":")[0] for o in misses)
    p(f"== misses ({len(misses)}: " + ", ".join(f"{r} {n}" for r, n in reasons.most_common()) + ")")
    for o in sorted(misses, key=lambda o: (o.target, list(KINDS).index(o.kind), o.probe)):
        p(f"  {o.target} | {o.probe} | {o.kind} | {o.path}:{o.line} | {o.reason}")
    p()
    p(f"== overall recall {_fmt(found, len(outcomes))} (bar {OVERALL_BAR:.2f})")
