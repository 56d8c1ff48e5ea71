"""Each rule's measured precision on judged real code: the table shipped, the rule pages, the docs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.realcode.rule_precision import tabulate
from verifier.cli import main
from verifier.report.rule_precision import Counts, measured, measured_precision_page, measured_table

ROOT = Path(__file__).resolve().parents[2]


def test_the_bar_needs_both_strict_and_lenient_precision():
    assert Counts(7, 2, 1).meets_bar  # 0.70 / 0.90
    assert not Counts(6, 4, 0).meets_bar  # strict 0.60
    assert not Counts(8, 0, 2).meets_bar  # lenient 0.80
    assert not Counts(0, 0, 0).meets_bar  # nothing judged is no measurement


def test_a_scorer_report_is_tabulated_per_rule_and_severity():
    report = {"repos": [
        {"set": None, "matched": [
            {"finding": {"code": "VP201", "severity": "MEDIUM"}, "verdict": "TP"},
            {"finding": {"code": "VP201", "severity": "MEDIUM"}, "verdict": "DEB"},
            {"finding": {"code": "VP201", "severity": "LOW"}, "verdict": "FP"},
        ]},
        {"set": "first-look", "matched": [{"finding": {"code": "VP102", "severity": "LOW"}, "verdict": "TP"}]},
    ]}
    table = tabulate(report, "abc1234")
    assert table == {
        "schema": 1, "build": "abc1234", "repositories": 2, "sets": ["first-look", "given"], "judged": 4,
        "rules": {"VP102": {"LOW": {"TP": 1, "DEB": 0, "FP": 0}},
                  "VP201": {"MEDIUM": {"TP": 1, "DEB": 1, "FP": 0}, "LOW": {"TP": 0, "DEB": 0, "FP": 1}}},
    }
    assert measured("VP201", table) == {"MEDIUM": Counts(1, 1, 0), "LOW": Counts(0, 0, 1)}


def test_the_docs_page_is_the_shipped_table():
    table = measured_table()
    assert table["schema"] == 1 and table["judged"] == sum(
        Counts.of(row).judged for rows in table["rules"].values() for row in rows.values()
    )
    assert (ROOT / "docs" / "rule-precision.md").read_text() == measured_precision_page(table)


def test_the_rule_page_shows_each_severity_measured(capsys):
    counts = measured("VP201")["MEDIUM"]
    assert main(["rule", "VP201"]) == 0
    text = capsys.readouterr().out
    assert "## Measured on real code" in text
    assert f"- MEDIUM: strict {counts.strict:.2f}, lenient {counts.lenient:.2f} over {counts.judged} judged" in text


def test_the_rule_record_carries_the_measurement(capsys):
    assert main(["rule", "VP201", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)["measured"]["MEDIUM"]
    counts = measured("VP201")["MEDIUM"]
    assert (record["tp"], record["deb"], record["fp"], record["meets_bar"]) == (
        counts.tp, counts.deb, counts.fp, counts.meets_bar
    )


def test_a_rule_nobody_judged_says_so(capsys):
    assert main(["rule", "VP902"]) == 0
    assert "No finding of this rule was judged" in capsys.readouterr().out
