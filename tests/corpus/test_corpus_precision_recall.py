"""The analyzer on the annotated corpus: per-rule precision and recall, and rule coverage.

A gate that cries wolf gets switched off, so every rule is held to a precision and a recall
bar on realistic training code (see `measure.py` for the annotation format).
Run with `pytest -s` to see the table even when it passes.
"""

from __future__ import annotations

import fnmatch

import pytest

from tests.corpus.measure import (
    MIN_EXPECTED_PER_RULE,
    SAMPLES,
    AnnotationError,
    format_report,
    measure,
    read_annotations,
)
from verifier.findings import Severity
from verifier.static.suppression import suppressed_codes


@pytest.fixture(scope="module")
def measurement():
    return measure()


def test_every_rule_meets_the_precision_and_recall_bar(measurement):
    print(format_report(measurement))  # shown with -s, and by pytest under "Captured stdout" on failure
    failing = measurement.failing_rules()
    assert not failing, f"below the precision/recall bar: {', '.join(failing)} (table and mismatches above)"


def test_every_rule_has_expected_findings_in_the_corpus(measurement):
    """Coverage: a rule with no annotated finding is measured on nothing."""
    thin = measurement.thinly_covered_rules()
    assert not thin, f"fewer than {MIN_EXPECTED_PER_RULE} expected findings for {thin}"


def test_the_corpus_is_analysed_without_internal_errors(measurement):
    assert measurement.internal_errors == []


def test_expect_comments_are_not_suppression_directives():
    """If `# expect:` suppressed findings, every expectation would be missed for the wrong reason."""
    assert suppressed_codes("loss.item()  # expect: VP201[MEDIUM], VP202") is None
    assert suppressed_codes("loss.item()  # unscored: VP201") is None


def test_annotations_come_from_comments_only(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'print("# expect: VP203")\n'
        "x = loss.item()  # expect: VP201[MEDIUM], VP202\n"
        "y = 1  # unscored: VP204 (framework hook)\n",
        encoding="utf-8",
    )
    found = read_annotations(sample, "sample.py", {"VP201", "VP202", "VP203", "VP204"})
    assert [(e.line, e.code, e.severity) for e in found.expected] == [
        (2, "VP201", Severity.MEDIUM),
        (2, "VP202", None),
    ]
    assert found.unscored == {("sample.py", 3, "VP204")}


@pytest.mark.parametrize("comment", ["# expect: VP2O1", "# expect: VP201[MEDUIM]", "# expect: VP999"])
def test_malformed_annotations_fail_loudly(tmp_path, comment):
    sample = tmp_path / "sample.py"
    sample.write_text(f"x = 1  {comment}\n", encoding="utf-8")
    with pytest.raises(AnnotationError):
        read_annotations(sample, "sample.py", {"VP201"})


def test_no_sample_is_named_like_a_test_module():
    """Samples must never be collected (conftest ignores the folder; names keep it that way)."""
    names = [path.name for path in SAMPLES.glob("*.py")]
    assert not [n for n in names if fnmatch.fnmatch(n, "test_*.py") or fnmatch.fnmatch(n, "*_test.py")]
