"""The Distributed category: scored in the Host-device sync bucket, shown in every format."""

from __future__ import annotations

import json

from tests.report.conftest import make_finding, make_report
from verifier.findings import Category, Severity
from verifier.report.json_format import render_json
from verifier.report.markdown import render_markdown
from verifier.report.sarif import render_sarif
from verifier.report.scoring import SCORE_CATEGORY_OF, SYNC, checked_categories, score
from verifier.rules import all_rules

BARRIER = make_finding(
    "VP603", line=42, severity=Severity.HIGH, name="barrier-in-step-loop", category=Category.DISTRIBUTED,
    source="        dist.barrier()", message="a barrier in the per-step loop makes every rank wait for the slowest one every step",
    fix="Remove the per-step barrier.",
)


def test_distributed_findings_cost_points_in_the_sync_bucket():
    assert SCORE_CATEGORY_OF[Category.DISTRIBUTED] == SYNC
    card = score([BARRIER])
    sync = card.category(SYNC)
    assert [(d.code, d.count) for d in sync.deductions] == [("VP603", 1)]
    assert sync.max_points - sync.points == sync.max_points / 2  # one HIGH costs half the share
    assert card.total == 87  # 100 - 25 / 2, rounded down


def test_distributed_rules_alone_make_the_sync_bucket_checked():
    distributed = [rule for rule in all_rules() if rule.category is Category.DISTRIBUTED]
    assert [rule.code for rule in distributed] == ["VP601", "VP602", "VP603", "VP604"]
    assert checked_categories(distributed) == frozenset({SYNC})


def test_markdown_has_a_distributed_section_with_the_finding():
    text = render_markdown(make_report([BARRIER]))
    section = text.split("### Distributed: ")[1].split("\n### ")[0].split("\n## ")[0]
    assert section.startswith("FAIL")
    assert "train.py:42" in section and "dist.barrier()" in section


def test_json_and_sarif_name_the_category():
    report = make_report([BARRIER])
    assert [f["category"] for f in json.loads(render_json(report))["findings"]] == ["Distributed"]
    sarif = json.loads(render_sarif(report))["runs"][0]
    assert sarif["results"][0]["properties"]["category"] == "Distributed"
    assert sarif["tool"]["driver"]["rules"][0]["properties"]["category"] == "Distributed"
