"""Every rule's own VALID and INVALID examples, run through the real engine."""

from __future__ import annotations

import pytest

from verifier.config import Settings
from verifier.fixes.apply import apply_fixes
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


@pytest.mark.parametrize(("rule", "example"), [case for case in _cases("INVALID") if case.values[0].code != "VP900"])
def test_invalid_example_offers_exactly_its_documented_fix(rule, example):
    """An example with `fixed` offers a fix of the rule's documented safety that turns it into
    exactly that text, where the finding is gone; one without offers none."""
    (finding,) = _findings_of(rule, example.code)
    if example.fixed is None:
        assert finding.autofix is None
        return
    assert finding.autofix is not None and finding.autofix.safe is rule.autofix_safe
    fixed = apply_fixes(example.code, [finding])
    assert fixed.text == example.fixed
    assert _findings_of(rule, example.fixed) == []


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_a_rule_documents_its_fix_exactly_when_its_examples_show_one(rule):
    assert bool(rule.autofix) is any(example.fixed is not None for example in rule.INVALID)


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
