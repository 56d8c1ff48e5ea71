"""Scoring of findings against the manifest, the report built from it, and the workspace's
choice of loop and helper-module name, without any mirror."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tests.realcode.inject.path_kinds import Injection, ProbeSite
from tests.realcode.inject.report import print_report, summary
from tests.realcode.inject.runner import Results
from tests.realcode.inject.scoring import score_injection
from tests.realcode.inject.targets import Target
from tests.realcode.inject.workspace import site_for

FIXTURES = Path(__file__).parent / "fixtures"


def _finding(line, code, heat="step", severity="MEDIUM", path="helpers.py"):
    return {"path": path, "line": line, "code": code, "heat": heat, "severity": severity}


def test_a_probe_is_found_only_by_its_rule_at_step_heat_on_its_own_line():
    sites = (
        ProbeSite("item", "helpers.py", 10, "train.py", 50),
        ProbeSite("float", "helpers.py", 13, "train.py", 51),
        ProbeSite("cuda_synchronize", "helpers.py", 16, "train.py", 52),
        ProbeSite("nonzero", "helpers.py", 19, "train.py", 53),
        ProbeSite("empty_cache", "helpers.py", 22, "train.py", 54),
    )
    findings = [
        _finding(10, "VP201", severity="LOW"),
        _finding(10, "VP202", severity="MEDIUM"),
        _finding(13, "VP201", heat="epoch"),
        _finding(16, "VP201"),
        _finding(54, "VP403", path="train.py"),
    ]
    outcomes = score_injection(findings, Injection("helper_module", {}, sites), "o/r", "o/r:train.py")
    by_probe = {o.probe: o for o in outcomes}
    assert by_probe["item"].found and by_probe["item"].severity == "MEDIUM"
    assert not by_probe["float"].found and by_probe["float"].reason.startswith("right rule, wrong heat")
    assert not by_probe["cuda_synchronize"].found and by_probe["cuda_synchronize"].reason.startswith("other rule only")
    assert by_probe["nonzero"].reason == "no finding"
    assert by_probe["empty_cache"].reason.startswith("reported on the call line 54 instead")


def test_report_and_summary_count_per_probe_kind_and_repository():
    sites = (ProbeSite("item", "t.py", 5, "t.py", 5), ProbeSite("float", "t.py", 6, "t.py", 6))
    results = Results()
    results.outcomes += score_injection([_finding(5, "VP201", path="t.py")], Injection("inline", {}, sites), "o/r", "o/r:t.py")
    results.outcomes += score_injection([], Injection("lambda", {}, sites), "o/r", "o/r:t.py")
    figures = summary(results)
    assert (figures["found"], figures["total"]) == (1, 4)
    assert figures["by_kind"]["inline"]["recall"] == 0.5 and figures["by_kind"]["lambda"]["recall"] == 0.0
    assert figures["cells"]["item|inline"] == {"found": 1, "total": 1}
    out = io.StringIO()
    print_report(results, out)
    text = out.getvalue()
    assert "o/r:t.py | float | inline | t.py:6 | no finding" in text
    assert "== overall recall 1/4 = 0.250" in text


def test_site_for_uses_the_package_name_and_a_free_helper_module_name(tmp_path):
    package = tmp_path / "trainers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "probe_helpers.py").write_text("# the repository's own module of that name\n")
    shutil.copy(FIXTURES / "trainer_class.py", package / "fit.py")
    site = site_for(Target("o/r", "trainers/fit.py", "test"), str(tmp_path))
    assert site.helper_path == "trainers/probe_helpers_.py"
    assert site.helper_module == "trainers.probe_helpers_"
    assert site.point.function == "Trainer.fit"


def test_a_file_with_several_loops_needs_a_line_in_the_table(tmp_path):
    (tmp_path / "gan.py").write_text(
        "for batch in loader:\n    d_loss = critic(batch)\n    d_loss.backward()\n"
        "    g_loss = generator(batch)\n    g_loss.backward()\n")
    with pytest.raises(LookupError, match="name the line"):
        site_for(Target("o/r", "gan.py", "test"), str(tmp_path))
    assert site_for(Target("o/r", "gan.py", "test", line=5), str(tmp_path)).subject == "g_loss"
