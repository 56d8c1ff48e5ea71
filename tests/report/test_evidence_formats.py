"""Every format shows what a finding rests on, and only a finding with every premise proven blocks."""

from __future__ import annotations

import json

import jsonschema

from tests.report.conftest import make_finding, make_report
from tests.report.test_machine_formats import FINDINGS_SCHEMA
from verifier.findings import Evidence, Premise, Severity, Status
from verifier.report.decision import decide
from verifier.report.github import annotation
from verifier.report.json_format import render_json
from verifier.report.markdown import render_markdown
from verifier.report.sarif import render_sarif
from verifier.report.text import finding_block, summary_lines

COST = Evidence(Premise.COST, Status.PROVEN, "`synchronize()` makes the host wait until every queued kernel has finished")
FREQUENCY = Evidence(Premise.FREQUENCY, Status.PROVEN, "runs every step: the step loop (iterates loader)", "train.py", 4)
ASSUMED_VALUE = Evidence(Premise.VALUE, Status.ASSUMED, "`scaler` is taken for a GradScaler by its name", "", 0)
PROVEN_RULE = Evidence(Premise.RULE, Status.PROVEN, "no `scaler.unscale_` runs before the clip", "train.py", 9)

PROVEN = make_finding("VP203", line=9, severity=Severity.HIGH, name="synchronize-in-loop", evidence=(COST, FREQUENCY))
ASSUMED = make_finding(
    "VP302", line=12, severity=Severity.HIGH, name="clip-before-unscale", evidence=(COST, ASSUMED_VALUE, PROVEN_RULE)
)


def test_only_a_finding_whose_premises_are_all_proven_blocks():
    # A severity configured above what the evidence allows is reported, never blocked on.
    assert PROVEN.proven and not ASSUMED.proven
    decision = decide([PROVEN, ASSUMED], score=90)
    assert decision.blocking == (PROVEN,)
    assert decide([ASSUMED], score=90).status == "PASS"


def test_text_shows_the_premises_a_reader_needs():
    lines = finding_block(ASSUMED, make_report([ASSUMED]))
    # A proven cost or frequency says nothing the line and its heat note do not; the rest is listed.
    assert lines[1:] == [
        "    = because: value assumed: `scaler` is taken for a GradScaler by its name",
        "    = because: rule proven: no `scaler.unscale_` runs before the clip (train.py:9)",
    ]
    assert finding_block(PROVEN, make_report([PROVEN]))[1:] == []


def test_json_lists_every_premise_and_validates():
    document = json.loads(render_json(make_report([ASSUMED])))
    jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(document)
    [record] = document["findings"]
    assert record["proven"] is False
    assert record["evidence"] == [
        {"premise": "cost", "status": "proven", "text": COST.text, "path": "", "line": 0},
        {"premise": "value", "status": "assumed", "text": ASSUMED_VALUE.text, "path": "", "line": 0},
        {"premise": "rule", "status": "proven", "text": PROVEN_RULE.text, "path": "train.py", "line": 9},
    ]


def test_sarif_carries_the_premises_as_properties():
    [result] = json.loads(render_sarif(make_report([ASSUMED])))["runs"][0]["results"]
    assert result["properties"]["proven"] is False
    assert result["properties"]["evidence"][1] == {"premise": "value", "status": "assumed", "text": ASSUMED_VALUE.text}
    assert result["properties"]["evidence"][2]["location"] == "train.py:9"


def test_markdown_lists_the_evidence_under_the_finding():
    text = render_markdown(make_report([ASSUMED]))
    assert "- **Evidence:**\n" in text
    assert f"  - **assumed** value: {ASSUMED_VALUE.text}\n" in text
    assert f"  - **proven** rule: {PROVEN_RULE.text} (`train.py:9`)\n" in text


def test_github_annotations_say_why():
    line = annotation(ASSUMED)
    assert line.endswith("%0Abecause: value assumed: `scaler` is taken for a GradScaler by its name"
                         "%0Abecause: rule proven: no `scaler.unscale_` runs before the clip (train.py:9)")


def test_the_minimum_score_is_checked_against_the_proven_findings_only():
    # Ten assumed MEDIUM findings of ten rules cost half the score; none of them is proven.
    codes = ("VP201", "VP202", "VP203", "VP204", "VP205", "VP401", "VP402", "VP403", "VP101", "VP104")
    assumed = [
        make_finding(code, line=10 + i, severity=Severity.MEDIUM, evidence=(COST, ASSUMED_VALUE))
        for i, code in enumerate(codes)
    ]
    proven = make_finding("VP102", line=40, severity=Severity.LOW, name="blocking-host-to-device-copy",
                          evidence=(COST, FREQUENCY))
    report = make_report([*assumed, proven])
    assert report.scorecard.total < 70 <= report.scorecard.proven_total
    assert report.decision.status == "PASS"
    assert summary_lines(report)[0] == (
        f"Score: {report.scorecard.total}/100 (minimum 70, static categories only; "
        f"{report.scorecard.proven_total}/100 over the proven findings, which the minimum is checked against)."
    )
    document = json.loads(render_json(report))
    assert document["score"]["proven_total"] == report.scorecard.proven_total
