"""Every rule's own VALID and INVALID examples, run through the real engine."""

from __future__ import annotations

import pytest

from verifier.config import Settings
from verifier.rules import all_rules
from verifier.static.engine import analyze_source
from verifier.static.source import UnreadableSource, decode_source

RULES = all_rules()


def _findings_of(rule, code: str):
    try:
        analysis = analyze_source("example.py", decode_source(code.encode()), [rule], Settings())
        return [f for f in analysis.findings if f.code == rule.code]
    except UnreadableSource as problem:
        return [("VP900", problem.line)]


def _cases(kind: str):
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize(("rule", "code"), list(_cases("VALID")))
def test_valid_example_produces_nothing(rule, code):
    assert _findings_of(rule, code) == []


@pytest.mark.parametrize(("rule", "example"), list(_cases("INVALID")))
def test_invalid_example_produces_exactly_the_expected_finding(rule, example):
    findings = _findings_of(rule, example.code)
    if rule.code == "VP900":
        assert findings == [("VP900", example.line)]
        return
    assert [(f.code, f.line, f.severity) for f in findings] == [(rule.code, example.line, example.severity)]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_rule_is_documented_and_has_examples(rule):
    assert rule.code.startswith("VP") and len(rule.code) == 5
    assert rule.name == rule.name.lower() and " " not in rule.name
    for text in (rule.summary, rule.why, rule.example, rule.use_instead, rule.fix):
        assert text.strip()
    assert rule.VALID and rule.INVALID


def test_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)
