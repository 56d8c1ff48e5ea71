"""The bundled examples, end to end through the command line: the exact findings and exit codes."""

from __future__ import annotations

import json

from pathlib import Path
from verifier.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BAD = str(EXAMPLES / "bad_train.py")
GOOD = str(EXAMPLES / "good_train.py")

EXPECTED_BAD = [
    ("VP101", 21, "MEDIUM", "step"),  # torch.stack over a comprehension in get_batch (called per step)
    ("VP101", 22, "MEDIUM", "step"),
    ("VP102", 23, "LOW", "step"),  # x.to(device), y.to(device) without non_blocking, per step: one statement, one finding
    ("VP201", 39, "MEDIUM", "step"),  # `return loss.item()` in a helper the step loop calls (every caller hands a device tensor)
    ("VP302", 52, "HIGH", "step"),  # clip_grad_norm_ before scaler.unscale_
    ("VP305", 53, "LOW", "step"),  # if torch.isfinite(norm): scaler.step(...)
    ("VP201", 58, "MEDIUM", "step"),  # if loss.item() < 1.0
    ("VP202", 59, "LOW", "step"),  # second read of the same loss (one call, one finding: not also VP201)
    ("VP203", 60, "LOW", "step"),  # torch.cuda.synchronize() every step, after the step's loss.item()
    ("VP301", 71, "CRITICAL", "step"),  # head_optimizer.step() bypasses head_scaler
    ("VP304", 72, "HIGH", "step"),  # head_scaler.update() with no step/unscale_
    ("VP303", 82, "HIGH", "step"),  # loss.backward() on an unscaled loss
    ("VP304", 83, "HIGH", "step"),  # warmup_scaler.step() updated only per epoch
    ("VP203", 92, "LOW", "step"),  # synchronize bracketing perf_counter: timing pattern
    ("VP203", 95, "LOW", "step"),
]


def run_json(capsys, *args) -> tuple[int, dict]:
    code = main([*args, "--format", "json", "--no-report", "--no-cache"])
    return code, json.loads(capsys.readouterr().out)


def test_bad_example_reports_every_planted_anti_pattern(capsys):
    code, report = run_json(capsys, BAD)
    assert code == 1
    assert [(f["code"], f["line"], f["severity"], f["heat"]) for f in report["findings"]] == EXPECTED_BAD
    assert report["decision"]["status"] == "BLOCK"
    assert report["counts"] == {"CRITICAL": 1, "HIGH": 4, "MEDIUM": 4, "LOW": 6, "INFO": 0}


def test_final_item_after_the_loop_is_not_flagged(capsys):
    _, report = run_json(capsys, BAD)
    assert 62 not in [f["line"] for f in report["findings"]]


def test_corrected_twin_has_nothing_above_info(capsys):
    code, report = run_json(capsys, GOOD)
    assert code == 0
    assert [f for f in report["findings"] if f["severity"] != "INFO"] == []
    assert report["decision"] == {"status": "PASS", "reasons": []}


def test_text_output_lines_and_summary(capsys):
    assert main([BAD, "--select", "VP301,VP203", "--no-report", "--no-cache"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"{BAD}:60:5: VP203 [LOW] `synchronize()` in a loop whose body already waits for the device at "
        "`loss.item()`: a second wait every iteration, which costs the launch gap after it"
    )
    assert lines[1] == f"    = note: runs every step: inside the step loop at {BAD}:46 (counts to max_steps, calls scaler.step())"
    assert lines[2].startswith(f"{BAD}:71:9: VP301 [CRITICAL] `head_optimizer.step()` bypasses")
    assert lines[3] == (
        f"    = note: runs every step: inside the step loop at {BAD}:67 (iterates loader, calls head_optimizer.step())"
    )
    assert lines[-2] == "Found 4 findings (1 CRITICAL, 3 LOW) in 1 of 1 analysed file; heat from 2 project files."
    assert lines[-1] == "Decision: BLOCK: 1 blocking finding"
