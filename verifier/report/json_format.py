"""JSON output, versioned: `schema_version` changes when a field is removed or changes meaning.

The schema is `verifier/report/schemas/findings.schema.json` (documented in docs/json-output.md).
"""

from __future__ import annotations

import json

from verifier import __version__
from verifier.findings import Finding
from verifier.report.decision import Decision, severity_counts

SCHEMA_VERSION = 1


def render_json(findings: list[Finding], files_analysed: int, decision: Decision, extra: dict | None = None) -> str:
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "verify-perf", "version": __version__},
        "files_analysed": files_analysed,
        "counts": severity_counts(findings),
        "decision": {"status": decision.status, "reasons": list(decision.reasons)},
        "findings": [f.to_dict() for f in findings],
    }
    if extra:
        document.update(extra)
    return json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False) + "\n"
