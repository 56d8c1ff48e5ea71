"""JSON output, versioned: `schema_version` changes when a field is removed or changes meaning.

The schema is `verifier/report/schemas/findings.schema.json`. A JSON output is also what
`--baseline FILE` reads back. It holds no date, so a stored baseline only changes with the code.
"""

from __future__ import annotations

import json
from fractions import Fraction

from verifier import __version__
from verifier.report.decision import severity_counts
from verifier.report.file_names import json_safe
from verifier.report.model import Report
from verifier.report.scoring import Scorecard

SCHEMA_VERSION = 2


def render_json(report: Report) -> str:
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "verify-perf", "version": __version__},
        "task": report.run.task,
        "diff_base": report.run.diff_base,
        "files_analysed": len(report.files),
        "files": list(report.files),
        "heat_files": report.heat_files,
        "rules": list(report.rules),
        "counts": severity_counts(list(report.findings)),
        "score": _score(report.scorecard, report.policy.min_score),
        "decision": {"status": report.decision.status, "reasons": list(report.decision.reasons)},
        "findings": [_finding(f, report) for f in report.findings],
        "suppressed": len(report.suppressed),
        "suppressed_findings": [
            {"path": f.path, "cell": f.cell, "line": f.shown_line, "column": f.column, "code": f.code,
             "severity": f.severity.name}
            for f in report.suppressed
        ],
        "dynamic": (
            {"status": "run", "result": report.dynamic.to_dict()}
            if report.dynamic is not None
            else {"status": "not run", "reason": report.dynamic_note}
        ),
        "baseline": _baseline(report),
    }
    return json_safe(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def _finding(finding, report: Report) -> dict:
    record = finding.to_dict()
    record["fingerprint"] = report.fingerprints[finding]
    if report.baseline is not None:
        record["baseline_state"] = report.baseline.states[finding]
    return record


def _points(value: Fraction) -> float:
    return round(float(value), 2)


def _score(scorecard: Scorecard, min_score: int) -> dict:
    return {
        "total": scorecard.total,
        "proven_total": scorecard.proven_total,
        **({"not_scored": scorecard.not_scored} if scorecard.not_scored else {}),
        "maximum": 100,
        "min_score": min_score,
        "static_only": scorecard.static_only,
        "categories": [
            {
                "name": c.name,
                "scored": c.scored,
                "points": _points(c.points),
                "max_points": _points(c.max_points),
                "note": c.note,
                "deductions": [
                    {"code": d.code, "name": d.name, "severity": d.severity.name, "count": d.count,
                     "points": _points(d.points)}
                    for d in c.deductions
                ],
            }
            for c in scorecard.categories
        ],
    }


def _baseline(report: Report) -> dict | None:
    comparison = report.baseline
    if comparison is None:
        return None
    return {
        "path": comparison.path,
        "score": comparison.baseline_score,
        "new": len(comparison.new),
        "existing": len(comparison.existing),
        "fixed": [
            {"fingerprint": s.fingerprint, "code": s.code, "name": s.name, "severity": s.severity,
             "path": s.path, "line": s.line, "message": s.message}
            for s in comparison.fixed
        ],
        "not_compared": len(comparison.not_compared),
        "score_compared": comparison.score_compared,
        "regressions": [
            {"mode": r.mode, "metric": r.metric, "baseline": r.baseline, "current": r.current, "note": r.note}
            for r in comparison.regressions
        ],
        "measured_note": comparison.measured_note,
    }
