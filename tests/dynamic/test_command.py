"""The CLI glue the lead wires into verify-perf: arguments, table, JSON, chart, exit codes."""

from __future__ import annotations

import argparse
import json
import re
import sys

import pytest

from verifier.dynamic.command import (
    add_bench_arguments,
    options_from_args,
    progress_enabled,
    run_bench,
    run_dynamic,
    terminal_progress,
)
from verifier.dynamic.results import Thresholds
from verifier.dynamic.verdicts import CPU_REASON

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = ["--preset", "tiny", "--modes", "fp32,bf16", "--device", "cpu", "--warmup", "2", "--steps", "2", "--repeats", "2", "--max-repeats", "2", "--sync-steps", "1", "--accuracy-steps", "3", "--accuracy-seeds", "2", "--time-budget", "300"]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="verify-perf bench")
    add_bench_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults_leave_choices_to_the_device_and_preset():
    options = options_from_args(parse())
    assert (options.preset, options.modes, options.steps, options.entry, options.device) == ("auto", None, None, None, "auto")
    assert options.thresholds == Thresholds()
    assert options.chart_path is None


def test_options_parse_modes_thresholds_and_chart_location():
    options = options_from_args(parse("--modes", "bf16, fp32", "--min-speedup", "2", "--output", "out/run.json"), Thresholds(max_accuracy_degradation=0.02))
    assert options.modes == ("bf16", "fp32")
    assert options.thresholds == Thresholds(min_speedup=2.0, min_memory_reduction=0.4, max_accuracy_degradation=0.02)
    assert options.chart_path == "out/run.png"


def test_bench_prints_the_table_and_writes_json_and_chart(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    output = tmp_path / "bench.json"
    assert run_bench(parse(*FAST, "--output", str(output))) == 0

    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("preset tiny (26,944 parameters, 1,024 tokens/step) on cpu: ")
    assert "mode  step ms" in printed
    # A CPU speedup is never judged: not evaluated, or unstable when the spread hides it.
    assert re.search(r"^  (NOT_EVALUATED|UNSTABLE)\s+AMP speedup over FP32 \(bf16\): ", printed, re.MULTILINE)
    assert CPU_REASON in printed
    data = json.loads(output.read_text())
    assert [m["mode"] for m in data["modes"]] == ["fp32", "bf16"]
    assert data["chart_path"] == str(tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_bench_refuses_unknown_modes_with_exit_2(capsys):
    assert run_bench(parse("--modes", "fp8", "--device", "cpu")) == 2
    assert "verify-perf bench: error: unknown mode(s) fp8" in capsys.readouterr().err


def test_bench_can_print_json(capsys, entry_fixtures):
    assert run_bench(parse("--entry", "entry_points:components", "--json", *FAST[4:])) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["source"] == "entry"


def test_run_dynamic_accepts_parsed_arguments(entry_fixtures):
    result = run_dynamic(parse("--entry", "entry_points:components", *FAST[4:]), show_progress=False)
    assert [m.mode for m in result.modes] == ["fp32", "bf16"]


def test_progress_is_silent_in_ci_and_off_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    monkeypatch.setenv("CI", "true")
    assert progress_enabled() is False
    monkeypatch.setenv("CI", "")
    assert progress_enabled() is True
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert progress_enabled() is False


def test_terminal_progress_accepts_updates():
    with terminal_progress(True) as update:
        update("fp32", "warm-up", 2, 10)
        update("fp32", "timed steps", 10, 10)
    with terminal_progress(False) as update:
        assert update is None


@pytest.mark.parametrize("flag", ["--steps", "--repeats", "--sync-steps"])
def test_counts_below_one_are_refused(flag, capsys):
    assert run_bench(parse("--device", "cpu", flag, "0")) == 2
    assert "must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(("flag", "value"), [("--accuracy-seeds", "-1"), ("--accuracy-steps", "0")])
def test_accuracy_counts_out_of_range_are_refused(flag, value, capsys):
    assert run_bench(parse("--device", "cpu", flag, value)) == 2
    assert "--accuracy-seeds must be at least 0 and --accuracy-steps at least 1" in capsys.readouterr().err


def test_accuracy_options_reach_the_harness():
    options = options_from_args(parse("--accuracy-seeds", "5", "--accuracy-steps", "40"))
    assert (options.accuracy_seeds, options.accuracy_steps) == (5, 40)
    assert (options_from_args(parse()).accuracy_seeds, options_from_args(parse()).accuracy_steps) == (3, None)


def test_bench_refuses_an_output_it_did_not_write_before_running(tmp_path, capsys, monkeypatch):
    mine = tmp_path / "results.json"
    mine.write_text('{"my": "measurements"}\n')
    ran = []
    monkeypatch.setattr(sys.modules[run_bench.__module__], "run_dynamic", lambda *a, **k: ran.append(1))
    assert run_bench(parse("--device", "cpu", "--output", str(mine))) == 2
    assert capsys.readouterr().err == (
        f"verify-perf bench: error: refusing to replace {mine}: verify-perf did not write it "
        "(pass --force to replace it, or choose another file)\n"
    )
    assert mine.read_text() == '{"my": "measurements"}\n' and ran == []


def test_the_time_budget_defaults_to_the_workloads_and_a_bad_one_exits_2(capsys):
    assert options_from_args(parse()).time_budget_s is None  # the preset's, or 120 s for an entry
    assert options_from_args(parse("--time-budget", "4")).time_budget_s == 4.0
    assert run_bench(parse("--preset", "tiny", "--device", "cpu", "--time-budget", "0")) == 2
    assert capsys.readouterr().err == (
        "verify-perf bench: error: --time-budget must be a finite number of seconds above 0\n"
    )
