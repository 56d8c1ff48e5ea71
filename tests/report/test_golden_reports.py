"""Golden files: the committed example reports under reports/examples/ are exactly what the
command line renders for the bundled examples.

Regenerate after an intended change with:
    VERIFY_PERF_UPDATE_GOLDEN=1 .venv/bin/pytest tests/report/test_golden_reports.py
and review the diff of reports/examples/ like code.
"""

from __future__ import annotations

import json
import re
import os
from pathlib import Path

import pytest

from verifier.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
GOLDEN = ROOT / "reports" / "examples"
DATE = "2026-01-01"
UPDATE = os.environ.get("VERIFY_PERF_UPDATE_GOLDEN") == "1"


def render_example(name: str, tmp_path: Path, monkeypatch) -> tuple[int, str]:
    monkeypatch.chdir(ROOT)
    output = tmp_path / f"{name}.md"
    code = main([f"examples/{name}.py", "--format", "markdown", "-o", str(output), "--task", name, "--date", DATE])
    return code, output.read_text(encoding="utf-8")


def check_golden(name: str, text: str) -> None:
    golden = GOLDEN / f"{name}.md"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8", newline="\n")
    assert golden.exists(), f"{golden} missing: run with VERIFY_PERF_UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), (
        f"{golden.relative_to(ROOT)} differs from the rendered report; if the change is intended, "
        "regenerate with VERIFY_PERF_UPDATE_GOLDEN=1"
    )


def test_bad_example_report_blocks_and_lists_every_blocking_finding(tmp_path, monkeypatch, capsys):
    code, text = render_example("bad_train", tmp_path, monkeypatch)
    check_golden("bad_train", text)
    assert code == 1
    assert "**Status: BLOCK**" in text
    main(["examples/bad_train.py", "--format", "json", "--no-report"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    blocking = [f for f in findings if f["severity"] in ("CRITICAL", "HIGH")]
    assert blocking
    decision = text.split("## 8. Decision")[1]
    for f in blocking:
        linked = re.search(
            rf"- {f['severity']} {f['code']} {f['name']} at \[`{re.escape(f['path'])}:{f['line']}`\]\(#(finding-\d+)\)",
            decision,
        )
        assert linked, f"{f['code']} at line {f['line']} is not linked from the decision"
        target = re.search(rf'<a id="{linked.group(1)}"></a>\n#### {f["severity"]} {f["code"]} ', text)
        assert target, "the link points at the finding's own section"


def test_each_finding_is_written_out_once_and_linked_from_the_summaries(tmp_path, monkeypatch):
    _, text = render_example("bad_train", tmp_path, monkeypatch)
    messages = [line for line in text.splitlines() if line.startswith("- **Problem:** ")]
    assert len(messages) == 15
    outside = text.split("## 2. Performance analysis by category")[0] + text.split("## 3. Dynamic results")[1]
    for line in messages:
        assert line.removeprefix("- **Problem:** ") not in outside
    anchors = re.findall(r'<a id="(finding-\d+)"></a>', text)
    assert sorted(anchors, key=lambda a: int(a.split("-")[1])) == [f"finding-{n}" for n in range(1, 16)]
    assert set(re.findall(r"\]\(#(finding-\d+)\)", text)) == set(anchors)
    assert "| Host-device sync | 14.1 / 25.0 | VP201 ×2 (2 MEDIUM): −7.5; VP202 ×1 (1 LOW): −1.2; " \
        "VP203 ×3 (3 LOW): −2.2 |" in text
    assert "Findings: 1 CRITICAL, 4 HIGH, 4 MEDIUM, 6 LOW, in 1 of 1 file.\nSuppressed by comments: 0." in text


def test_good_example_report_passes_with_full_static_score(tmp_path, monkeypatch):
    code, text = render_example("good_train", tmp_path, monkeypatch)
    check_golden("good_train", text)
    assert code == 0
    assert "**Status: PASS**" in text
    assert "**Score: 100/100** (static categories only" in text


@pytest.mark.parametrize("name", ["bad_train", "good_train"])
def test_two_runs_with_the_same_date_are_byte_identical(name, tmp_path, monkeypatch):
    first = render_example(name, tmp_path / "a", monkeypatch)[1]
    second = render_example(name, tmp_path / "b", monkeypatch)[1]
    assert first.encode() == second.encode()


def test_docs_excerpt_matches_the_committed_example():
    readme = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    golden = (GOLDEN / "bad_train.md").read_text(encoding="utf-8")
    score_line = next(line for line in golden.splitlines() if line.startswith("**Score:"))
    assert score_line in readme, "update the excerpt in docs/reports.md"
