"""GitLab Code Quality report (`--format gitlab`): the JSON array GitLab reads from a job's
`artifacts:reports:codequality` and shows in merge requests and pipelines.

Each finding is one issue with GitLab's required fields: `description`, `check_name`,
`fingerprint`, `severity` and `location` (`path`, `lines.begin`). GitLab tells a merge request's
new issues from the target branch's by fingerprint, so the fingerprint is the finding's identity
(`verifier.report.identity`: rule, enclosing function, normalised statement), the one JSON and
SARIF carry: a renamed file or code moved down the file keeps its issues. GitLab also requires
fingerprints to be unique in a report: a second finding with the same identity (the same line
in two files) gets that identity counted. Paths are relative to `$CI_PROJECT_DIR` when set (where
GitLab checks the repository out), else as every other format writes them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter

from verifier.findings import Finding, Severity
from verifier.report.file_names import json_safe
from verifier.report.model import Report

# GitLab's five levels, in the order of ours.
SEVERITY = {
    Severity.INFO: "info",
    Severity.LOW: "minor",
    Severity.MEDIUM: "major",
    Severity.HIGH: "critical",
    Severity.CRITICAL: "blocker",
}


def render_gitlab(report: Report, project_dir: str | None = None) -> str:
    project_dir = project_dir if project_dir is not None else os.environ.get("CI_PROJECT_DIR") or None
    seen: Counter[str] = Counter()
    issues = []
    for finding in report.findings:
        identity = report.fingerprints[finding]
        occurrence = seen[identity]
        seen[identity] += 1
        issues.append(_issue(finding, _unique(identity, occurrence), project_dir))
    return json_safe(json.dumps(issues, indent=2, ensure_ascii=False)) + "\n"


def _issue(finding: Finding, fingerprint: str, project_dir: str | None) -> dict:
    cell = f" (cell {finding.cell})" if finding.cell is not None else ""
    return {
        "type": "issue",
        "check_name": finding.code,
        "description": f"{finding.code} {finding.name}{cell}: {finding.message}",
        "categories": ["Performance"],
        "severity": SEVERITY[finding.severity],
        "fingerprint": fingerprint,
        "location": {
            "path": _path(finding.path, project_dir),
            "lines": {"begin": finding.shown_line, "end": finding.shown_end_line},
        },
    }


def _unique(identity: str, occurrence: int) -> str:
    """The identity itself the first time; counted after that, so that each issue is its own."""
    if occurrence == 0:
        return identity
    return hashlib.sha256(f"{identity}\0{occurrence}".encode()).hexdigest()[: len(identity)]


def _path(path: str, project_dir: str | None) -> str:
    if project_dir:
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(project_dir))
        if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
            path = relative
    return path.replace(os.sep, "/")
