"""The stage-4 markdown report: section order, safe markdown, honest dynamic results."""

from __future__ import annotations

import re
from dataclasses import replace

from tests.report.conftest import make_dynamic, make_finding, make_report
from verifier.dynamic.results import DeviceFacts, DynamicResult, Method, ModeResult, Workload
from verifier.findings import Severity
from verifier.report.markdown import render_markdown
from verifier.report.model import RunInfo

SECTIONS = [
    "## 1. Executive summary",
    "## 2. Performance analysis by category",
    "## 3. Dynamic results",
    "## 4. Issues summary by severity",
    "## 5. Score breakdown",
    "## 6. Baseline comparison",
    "## 7. Recommendations",
    "## 8. Decision",
]


def test_header_and_sections_in_product_order():
    report = make_report([make_finding()])
    text = render_markdown(report)
    assert text.startswith("# Performance Verification Report - T001\n")
    assert "| Stage | 4 (performance verification) |" in text
    assert "| Date | 2026-01-01 |" in text
    assert "**Status: PASS**" in text
    assert re.search(rf"^\*\*Score: {report.scorecard.total}/100\*\*", text, re.MULTILINE)
    assert report.scorecard.total < 100
    positions = [text.index(heading) for heading in SECTIONS]
    assert positions == sorted(positions)


def test_every_finding_shows_location_source_problem_impact_and_fix():
    text = render_markdown(make_report([make_finding(line=58, source="    if loss.item() < 1.0:")]))
    assert "#### MEDIUM VP201 sync-in-hot-loop at `train.py:58`" in text
    assert "```python\nif loss.item() < 1.0:\n```" in text
    assert "- **Problem:** `.item()` of `loss`" in text
    assert "- **Impact:** CUDA work is queued asynchronously." in text
    assert "- **Fix:** Accumulate on the device" in text
    assert "Corrected pattern:" in text


def test_impact_never_invents_a_percentage_without_a_measurement():
    text = render_markdown(make_report([make_finding()]))
    impact = [line for line in text.splitlines() if line.startswith("- **Impact:**")]
    assert impact and not any(re.search(r"\d+(\.\d+)?\s*%", line) for line in impact)
    assert "**Measured:**" not in text


def test_backticks_in_a_snippet_cannot_close_its_fence():
    snippet = 'log(f"""```{loss.item()}```""")'
    text = render_markdown(make_report([make_finding(source=snippet)]))
    assert f"````python\n{snippet}\n````" in text


def test_pipes_in_table_cells_are_escaped():
    settings_report = make_report([make_finding(message="a | b")])
    text = render_markdown(replace(settings_report, run=replace(settings_report.run, task="T|1")))
    assert "| Task | T\\|1 |" in text


def test_dynamic_not_run_says_so_and_never_shows_a_target_as_passed():
    text = render_markdown(make_report([]))
    assert "Not run: `--dynamic` was not requested." in text
    assert "| AMP speedup over FP32 | not measured | not measured: dynamic harness not run" in text
    assert "✅" not in text.split("## 3. Dynamic results")[1].split("## 4.")[0]


def test_dynamic_results_table_verdicts_and_measured_syncs_at_the_finding():
    text = render_markdown(make_report([make_finding(line=10)], dynamic=make_dynamic()))
    assert "| Metric | FP32 | FP16 + GradScaler | BF16 |" in text
    assert "| Status | ok | ok | failed: bf16 unsupported on this device |" in text
    assert "| Step time, median (IQR) | 20.00 ms (IQR 1.00 ms) | 11.11 ms (IQR 0.56 ms) | not measured |" in text
    assert "| Peak memory | 4,096.0 MiB | 2,048.0 MiB | not measured |" in text
    assert "| AMP speedup over FP32 (fp16) | 1.80x | >= 1.50x | ✅ PASS |" in text
    assert "| Accuracy degradation vs FP32 (bf16) | not measured | <= 1.00% | not measured: accuracy not measured" in text
    assert "- **Measured:** FP32: 6 host syncs (item) over 3 counted steps, 2.00 per step" in text
    assert "Device: NVIDIA H100 80GB HBM3 (cuda)" in text


def test_a_result_full_of_none_renders_as_not_measured():
    bare = DynamicResult(
        workload=Workload(source="entry", name="mypkg.train:step"),
        device=DeviceFacts(backend="cpu", name="unknown"),
        method=Method(timer="perf_counter", warmup_steps=0, steps=0, repeats=0, sync_steps=0, eval_batches=0, seed=0),
        modes=(ModeResult(mode="fp32", dtype="float32"),),
    )
    text = render_markdown(make_report([], dynamic=bare))
    assert "| Step time, median (IQR) | not measured |" in text
    assert "| Accuracy | not measured |" in text
    assert "No target was judged" in text
    assert "✅" not in text.split("## 3. Dynamic results")[1].split("## 4.")[0]


def test_harness_error_is_reported_not_scored():
    text = render_markdown(make_report([], dynamic=make_dynamic(error="CUDA out of memory", modes=(), verdicts=())))
    assert "Not measured: the harness could not run the workload: CUDA out of memory" in text
    assert "| Measured performance | not scored | the harness could not measure (CUDA out of memory) |" in text


def test_chart_is_linked_relative_to_the_report(tmp_path):
    report = make_report([], dynamic=make_dynamic(chart_path=str(tmp_path / "reports" / "T001.png")))
    report = replace(report, run=RunInfo(**{**report.run.__dict__, "report_path": str(tmp_path / "reports" / "T001.md")}))
    assert "![Step time and peak memory by precision mode](T001.png)" in render_markdown(report)


def test_blocking_fixes_come_first_in_recommendations_and_decision():
    findings = [
        make_finding("VP201", line=5),
        make_finding("VP301", line=9, severity=Severity.CRITICAL, name="optimizer-step-bypasses-scaler",
                     fix="Step through the scaler."),
    ]
    text = render_markdown(make_report(findings))
    recommendations = text.split("## 7. Recommendations")[1].split("## 8.")[0]
    assert recommendations.index("VP301") < recommendations.index("VP201")
    assert "Blocking (fix before merging):" in recommendations
    decision = text.split("## 8. Decision")[1]
    assert "**BLOCK**" in decision
    assert "- CRITICAL VP301 optimizer-step-bypasses-scaler at [`train.py:9`](#finding-2)" in decision
    assert "Required fixes: blocking recommendation 1 in section 7" in decision
    assert "```sh\nverify-perf train.py --task T001 --date 2026-01-01\n```" in decision


def test_rendering_is_deterministic():
    findings = [make_finding(line=n) for n in (30, 10, 20)]
    assert render_markdown(make_report(findings)) == render_markdown(make_report(list(reversed(findings))))


def test_seeded_accuracy_shows_its_seeds_length_band_and_the_verdicts_per_seed_band():
    from verifier.dynamic.results import AccuracyRun, Verdict, VerdictStatus

    def seeded(mode: ModeResult, accuracies: tuple[float, ...]) -> ModeResult:
        runs = tuple(AccuracyRun(seed, accuracy, 1.5, 3.4, 1.5) for seed, accuracy in enumerate(accuracies))
        return replace(mode, accuracy=sum(accuracies) / len(accuracies), accuracy_runs=runs)

    base = make_dynamic()
    fp32, fp16, bf16 = base.modes
    unstable = Verdict(
        "accuracy_degradation", "fp16", "Accuracy degradation vs FP32 (fp16)", "<=", 0.01, "fraction", 0.005,
        VerdictStatus.UNSTABLE, "unstable: the per-seed differences -0.0100..+0.0200 over 3 seeds straddle the target 0.01",
        band=(-0.01, 0.02),
    )
    dynamic = replace(
        base,
        method=replace(base.method, accuracy_steps=60, accuracy_seeds=(0, 1, 2)),
        modes=(seeded(fp32, (0.80, 0.81, 0.82)), seeded(fp16, (0.81, 0.80, 0.80)), bf16),
        verdicts=(*base.verdicts[:2], unstable),
    )
    text = render_markdown(make_report([], dynamic=dynamic))
    assert "| Eval loss, mean of 3 seeds × 60 steps | 1.2345 | 1.2401 | not measured |" in text
    assert "| Accuracy, mean of 3 seeds × 60 steps (min–max) | 0.8100 (0.8000–0.8200) | 0.8033 (0.8000–0.8100) | not measured |" in text
    assert (
        "| Accuracy degradation vs FP32 (fp16) | 0.50% (per seed -1.00% to 2.00%) | <= 1.00% | "
        "unstable: the per-seed differences -0.0100..+0.0200 over 3 seeds straddle the target 0.01 |"
    ) in text


def test_a_single_run_accuracy_says_it_has_no_band():
    text = render_markdown(make_report([], dynamic=make_dynamic()))
    assert "| Accuracy | 0.8100 (one run, no band) | 0.8050 (one run, no band) | not measured |" in text
