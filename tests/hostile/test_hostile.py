"""The hostile-input sweep in the test run: a few cases of every category by default, the whole
sweep in the slow job (`pytest -m slow tests/hostile`, or `python -m tests.hostile -j 2` for the
table alone), and checks that the runner's invariants can fail."""

from __future__ import annotations

import os

import pytest

from tests.hostile.case import CACHED, Case
from tests.hostile.catalogue import CATEGORIES, all_cases, fast_cases
from tests.hostile.runner import (
    DATA_LOSS,
    FAIL_OPEN,
    FORGED,
    INTERNAL,
    OTHER,
    Run,
    run_case,
)
from tests.hostile.sources import GOOD, TRAIN
from tests.hostile.sweep import run_all
from tests.hostile.table import markdown
from tests.hostile.trees import JSON, files

FAST = fast_cases()
# Two at a time by default: the machines this runs on are small and shared.
SWEEP_JOBS = int(os.environ.get("VERIFY_PERF_SWEEP_JOBS", "2"))


@pytest.mark.parametrize("case", FAST, ids=[case.ident for case in FAST])
def test_a_hostile_case(case, tmp_path):
    outcome = run_case(case, tmp_path)
    assert outcome.passed, outcome.describe()


@pytest.mark.slow
def test_the_whole_sweep():
    outcomes = run_all(all_cases(), jobs=SWEEP_JOBS)
    table = markdown(outcomes)
    print(f"\n{table}")
    failed = [outcome.describe() for outcome in outcomes if not outcome.passed]
    assert not failed, table + "\n\n" + "\n".join(failed)


def test_the_sweep_is_generated_the_same_every_time_and_covers_every_category():
    first, second = all_cases(), all_cases()
    assert [(c.ident, c.argv, c.exit_code, c.outputs) for c in first] == [
        (c.ident, c.argv, c.exit_code, c.outputs) for c in second
    ]
    assert len(first) >= 700
    categories = {module.CATEGORY for module in CATEGORIES if module.cases()}
    assert {c.category for c in FAST} == categories
    assert 50 <= len(FAST) <= 100
    # Every exit code is one docs/usage.md documents, or death by a signal the case itself sends.
    for case in first:
        assert case.exit_code in (None, 0, 1, 2) or (case.interrupt and case.exit_code == -case.interrupt[1]), case.ident


def _case(name: str, build, argv, exit_code, **extra) -> Case:
    return Case("self-check", name, build, argv, exit_code, **extra)


def _kinds(outcome) -> list[str]:
    return sorted({kind for kind, _ in outcome.failures})


def test_a_file_written_outside_the_expected_outputs_is_data_loss(tmp_path):
    # The cache and its key may be written; the report is not declared.
    outcome = run_case(_case("writes", files({"train.py": TRAIN}), ("train.py",), 1, outputs=CACHED), tmp_path)
    written = ("project/reports created, project/reports/.verify-perf-outputs created, "
               "project/reports/train.md created")
    assert outcome.failures == [(DATA_LOSS, written)]


def test_a_pass_where_the_code_blocks_is_fail_open(tmp_path):
    outcome = run_case(_case("passes", files({"good.py": GOOD}), ("good.py", *JSON, "--no-cache"), 1,
                             must_find=(("good.py", "VP203"),)), tmp_path)
    assert _kinds(outcome) == [FAIL_OPEN]
    assert [detail for _, detail in outcome.failures] == [
        "exit 0 where the code blocks (documented: 1)", "findings missing: [('good.py', 'VP203')]",
    ]


def test_a_result_that_differs_from_the_clean_run_is_trusted_forged_data(tmp_path):
    # The "forged" tree holds the clean code, the reference the blocking one: the results differ.
    outcome = run_case(_case("forged", files({"train.py": GOOD}), ("train.py", *JSON, "--no-cache"), 0,
                             reference=files({"train.py": TRAIN}), forged=True), tmp_path)
    assert _kinds(outcome) == [FORGED]
    assert outcome.failures[0][1].startswith("result differs from the reference run: exit code 0 vs 1")


def test_a_traceback_or_a_signal_is_an_internal_error():
    from tests.hostile.runner import _exit_failures

    case = _case("crash", files({}), ("train.py",), 1)
    crashed = Run(2, b"", "verify-perf: internal error: KeyError: 'x' (set VERIFY_PERF_DEBUG=1 ...)\n", 1.0)
    assert _exit_failures(case, crashed) == [
        (INTERNAL, "stderr holds 'internal error'"), (OTHER, "exit 2 (documented: 1)"),
    ]
    assert _exit_failures(case, Run(-11, b"", "", 1.0)) == [(INTERNAL, "exit status -11 (documented: 1)")]
    assert _exit_failures(case, Run(1, b"", "Traceback (most recent call last):\n", 1.0)) == [
        (INTERNAL, "stderr holds 'Traceback (most recent call last)'"),
    ]
