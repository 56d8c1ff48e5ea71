"""SARIF 2.1.0 for code-scanning dashboards (GitHub code scanning, VS Code SARIF viewer).

Every rule of the run is described once under `tool.driver.rules`; results point at them by
id and index. Locations are relative URIs against `%SRCROOT%` so the file is the same on every
machine. Fingerprints are the baseline fingerprints (`verifyPerf/v2`: what the finding is, not
where), so dashboards track findings across edits, renames and moves. A result's message carries
its heat trace with each step linked to its related location (`[train.py:30](2)`): GitHub code
scanning links related locations only where the message embeds them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import PurePath

from verifier.findings import Category, Finding, Heat, Severity
from verifier.report.evidence import RUNTIME_CODE, RUNTIME_FIX, RUNTIME_NAME, RUNTIME_SUMMARY, RUNTIME_WHY
from verifier.report.github import LEVEL as GITHUB_LEVEL
from verifier.report.file_names import json_safe, uri_path
from verifier.report.model import Report
from verifier.report.rule_docs import rule_markdown
from verifier.report.text import heat_note

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

# The same levels as the `github` format (its "notice" is SARIF's "note"), so a finding reads the
# same in an annotation and in code scanning.
LEVEL = {severity: {"notice": "note"}.get(level, level) for severity, level in GITHUB_LEVEL.items()}
# SARIF's own baselineState vocabulary for our new/existing states.
BASELINE_STATE = {"new": "new", "existing": "unchanged"}
# partialFingerprints keys: identity fingerprints, and the path-keyed ones of older baselines.
IDENTITY_KEY, PATH_KEY = "verifyPerf/v2", "verifyPerf/v1"


# A trace step's place while the note is built: no message can hold a NUL (Python refuses such source).
STEP_MARK = re.compile("\x00([0-9]+)\x00")


def plain_text(text: str) -> str:
    """A plain-text SARIF message: `\\`, `[` and `]` escaped with a backslash, as the specification
    asks inside a link's text and CodeQL does everywhere, so no text of ours reads as a link."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def message_text(finding: Finding) -> str:
    """The finding's message, then its heat trace with every step an embedded link to the related
    location of the same id (`relatedLocations` numbers the steps from 1)."""
    places: dict[int, str] = {}

    def mark(where: str, number: int) -> str:
        places[number] = where
        return f"\x00{number}\x00"

    note = heat_note(finding, numbered=mark)
    text = plain_text(finding.message)
    if not note:
        return text
    linked = STEP_MARK.sub(lambda m: f"[{plain_text(places[int(m[1])])}]({m[1]})", plain_text(note))
    return f"{text}\n{linked}"


def artifact_location(path: str) -> dict:
    """A relative `uri` against `%SRCROOT%` (the working directory), or an absolute `file:` URI
    with no base for a file outside it (named absolute or as `../x.py`); never both."""
    pure = PurePath(path)
    if pure.is_absolute() or os.pardir in pure.parts:
        absolute = os.path.abspath(path)
        relative = os.path.relpath(absolute)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return {"uri": PurePath(absolute).as_uri()}
        path = relative
    return {"uri": uri_path(path), "uriBaseId": "%SRCROOT%"}


def render_sarif(report: Report) -> str:
    from verifier.rules import all_rules

    fixed = report.baseline.fixed if report.baseline is not None else ()
    reported = {f.code for f in (*report.findings, *report.suppressed)} | {s.code for s in fixed}
    descriptors = [_descriptor(rule) for rule in all_rules() if rule.code in reported]
    if RUNTIME_CODE in reported:
        descriptors.append(_runtime_descriptor())
    index = {descriptor["id"]: i for i, descriptor in enumerate(descriptors)}
    results = [_result(f, report, index) for f in report.findings]
    results += [_suppressed(f, report, index) for f in report.suppressed]
    stored_key = PATH_KEY if report.baseline is not None and report.baseline.path_keyed else IDENTITY_KEY
    results += [_absent(stored, index, stored_key) for stored in fixed]
    run = {
        "tool": {
            "driver": {
                "name": "verify-perf",
                "version": report.version,
                "semanticVersion": report.version,
                "rules": descriptors,
            }
        },
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The directory verify-perf ran in."}}},
        "invocations": [
            {
                "executionSuccessful": True,
                "exitCode": 1 if report.decision.blocks else 0,
                "properties": {"status": report.decision.status, "reasons": list(report.decision.reasons)},
            }
        ],
        "results": results,
        "properties": {
            "task": report.run.task,
            "score": report.scorecard.total,
            "minScore": report.policy.min_score,
            "status": report.decision.status,
            "suppressed": len(report.suppressed),
        },
    }
    if report.run.sarif_category:
        # Only when asked: a fixed id would override upload-sarif's own `category`.
        run["automationDetails"] = {"id": f"{report.run.sarif_category.rstrip('/')}/"}
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json_safe(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def _descriptor(rule) -> dict:
    severities = {heat.label: rule.severity.name_at(heat) for heat in Heat}
    top = max((s for s in (rule.severity.at(h) for h in Heat) if s is not None), default=Severity.INFO)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": rule.fix, "markdown": rule_markdown(rule)},
        "defaultConfiguration": {"level": LEVEL[top]},
        "properties": {"category": rule.category.value, "severityByHeat": severities, "tags": ["performance"]},
    }


def _runtime_descriptor() -> dict:
    """The runtime-only finding (VP290) is no static rule, but its results need a descriptor too."""
    return {
        "id": RUNTIME_CODE,
        "name": RUNTIME_NAME,
        "shortDescription": {"text": RUNTIME_SUMMARY},
        "fullDescription": {"text": RUNTIME_WHY},
        "help": {"text": RUNTIME_FIX},
        "defaultConfiguration": {"level": LEVEL[Severity.MEDIUM]},
        "properties": {"category": Category.SYNC.value, "severityByHeat": {"step": "MEDIUM"}, "tags": ["performance"]},
    }


def _result(finding: Finding, report: Report, index: dict[str, int]) -> dict:
    region = {
        "startLine": finding.shown_line,
        "startColumn": finding.column,
        "endLine": finding.shown_end_line,
    }
    if finding.end_column and finding.end_line >= finding.line:
        region["endColumn"] = finding.end_column
    if finding.source:
        region["snippet"] = {"text": finding.source}
    result = {
        "ruleId": finding.code,
        "ruleIndex": index[finding.code],
        "level": LEVEL[finding.severity],
        "message": {"text": message_text(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact_location(finding.path),
                    "region": region,
                }
            }
        ],
        "partialFingerprints": {IDENTITY_KEY: report.fingerprints[finding]},
        "properties": {
            "severity": finding.severity.name,
            "heat": finding.heat.label,
            "category": finding.category.value,
            "fix": finding.fix,
            # The premises the finding rests on; only a finding with all proven can block.
            "proven": finding.proven,
            "evidence": [
                {"premise": item.premise.value, "status": item.status.value, "text": item.text,
                 **({"location": f"{item.path}:{item.line}"} if item.path and item.line else {})}
                for item in finding.evidence
            ],
            # In a notebook, the cell the region's lines count within.
            **({"cell": finding.cell} if finding.cell is not None else {}),
        },
    }
    if finding.heat_trace:
        result["relatedLocations"] = [_trace_location(i, step) for i, step in enumerate(finding.heat_trace, start=1)]
    if report.baseline is not None and finding in report.baseline.states:
        result["baselineState"] = BASELINE_STATE[report.baseline.states[finding]]
    return result


def _trace_location(number: int, step) -> dict:
    """One step of the heat trace (a call site, or the loop that makes the finding hot)."""
    physical: dict = {"artifactLocation": artifact_location(step.path)}
    if step.line:
        physical["region"] = {"startLine": step.line}
    return {"id": number, "physicalLocation": physical, "message": {"text": plain_text(step.what)}}


def _suppressed(finding: Finding, report: Report, index: dict[str, int]) -> dict:
    """A finding a comment silenced: present, marked as suppressed in source (dashboards hide it)."""
    result = _result(finding, report, index)
    result["suppressions"] = [{"kind": "inSource"}]
    result.pop("baselineState", None)
    return result


def _absent(stored, index: dict[str, int], key: str) -> dict:
    """A finding the baseline had and this run no longer has: SARIF's `absent` state."""
    result = {
        "ruleId": stored.code,
        "level": "none",
        "kind": "pass",
        "message": {"text": plain_text(f"fixed since the baseline: {stored.message}")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact_location(stored.path),
                    "region": {"startLine": max(stored.line, 1)},
                }
            }
        ],
        "partialFingerprints": {key: stored.fingerprint},
        "baselineState": "absent",
    }
    if stored.code in index:
        result["ruleIndex"] = index[stored.code]
    return result
