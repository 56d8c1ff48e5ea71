"""The command line around the report: where it goes, task names, dates, atomic writes,
configuration errors, and the lazily loaded dynamic harness."""

from __future__ import annotations

import os
import sys
import types

import pytest

from tests.report.conftest import make_dynamic
from verifier import cli, writing
from verifier.cli import main
from verifier.writing import write_output
from verifier.dynamic.results import VerdictStatus
from verifier.errors import UsageError

SYNC_LOOP = """\
import torch

def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
"""
CLEAN = "import torch\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n        model(x, y).backward()\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder as the working directory, with one blocking and one clean file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    (tmp_path / "train.py").write_text(SYNC_LOOP, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    # These tests are about the gate, not the catalogue: only the sync rules run.
    (tmp_path / "pyproject.toml").write_text('[tool.verify-perf]\nselect = ["VP2"]\n', encoding="utf-8")
    return tmp_path


def test_default_text_on_stdout_and_markdown_report_under_reports(project, capsys):
    assert main(["train.py", "--date", "2026-01-01"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith("train.py:8:9: VP203 [HIGH]")
    assert captured.out.splitlines()[-1] == "Decision: BLOCK: 1 blocking finding"
    assert captured.err.strip() == "Report: reports/train.md (BLOCK, score {}/100)".format(
        captured.out.split("Score: ")[1].split("/")[0]
    )
    report = (project / "reports" / "train.md").read_text(encoding="utf-8")
    assert report.startswith("# Performance Verification Report - train\n")


def test_task_names_the_report(project):
    main(["train.py", "--task", "T035", "--date", "2026-01-01"])
    assert (project / "reports" / "T035.md").read_text().startswith("# Performance Verification Report - T035")


def test_report_dir_and_no_report(project):
    main(["clean.py", "--report-dir", "out/md"])
    assert (project / "out" / "md" / "clean.md").exists()
    main(["clean.py", "--no-report", "--task", "none"])
    assert not (project / "reports").exists()


def test_markdown_format_with_output_writes_only_that_file(project, capsys):
    assert main(["clean.py", "--format", "markdown", "-o", "summary.md"]) == 0
    assert capsys.readouterr().out == ""
    assert (project / "summary.md").read_text().startswith("# Performance Verification Report - clean")
    assert not (project / "reports").exists()


def test_markdown_format_on_stdout_matches_the_report_file(project, capsys):
    main(["train.py", "--format", "markdown", "--date", "2026-01-01"])
    assert capsys.readouterr().out == (project / "reports" / "train.md").read_text()


@pytest.mark.parametrize("task", ["../x", "a/b", "..", "a\\b", "", ".hidden", "x" * 200, "a b"])
def test_unsafe_task_is_refused_with_exit_2(project, capsys, task):
    assert main(["train.py", "--task", task]) == 2
    assert "--task" in capsys.readouterr().err
    assert not (project / "reports").exists()
    assert not (project.parent / "x.md").exists()


def test_quiet_prints_findings_only(project, capsys):
    assert main(["train.py", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [line for line in captured.out.splitlines() if line.startswith("train.py:")]
    assert captured.err == ""


def test_date_from_option_or_source_date_epoch(project, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    main(["clean.py", "--task", "epoch"])
    assert "| Date | 2023-11-14 |" in (project / "reports" / "epoch.md").read_text()
    main(["clean.py", "--task", "option", "--date", "2026-02-03"])
    assert "| Date | 2026-02-03 |" in (project / "reports" / "option.md").read_text()


@pytest.mark.parametrize(("date", "epoch"), [("2026-13-01", None), ("yesterday", None), (None, "soon")])
def test_bad_dates_are_usage_errors(project, monkeypatch, capsys, date, epoch):
    if epoch:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    args = ["clean.py"] + (["--date", date] if date else [])
    assert main(args) == 2
    assert "expected" in capsys.readouterr().err


def test_same_date_gives_identical_bytes_for_every_format(project, capsys):
    for output_format in ("markdown", "json", "sarif", "github", "text"):
        outputs = []
        for _ in range(2):
            main(["train.py", "clean.py", "--format", output_format, "--date", "2026-01-01", "--no-report"])
            outputs.append(capsys.readouterr().out.encode())
        assert outputs[0] == outputs[1], output_format


def test_an_interrupted_write_leaves_the_old_report_intact(project, monkeypatch):
    report = project / "reports" / "train.md"
    main(["train.py", "--date", "2026-01-01"])
    before = report.read_bytes()

    real_fdopen = os.fdopen

    class HalfWrite:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def write(self, text):
            self.stream.write(text[: len(text) // 2])
            raise KeyboardInterrupt

    monkeypatch.setattr(writing.os, "fdopen", lambda *a, **k: HalfWrite(real_fdopen(*a, **k)))
    assert main(["train.py", "--date", "2030-01-01"]) == 2
    assert report.read_bytes() == before
    assert sorted(p.name for p in report.parent.iterdir()) == [".verify-perf-outputs", "train.md"]


def test_a_failed_rename_is_a_usage_error_and_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writing.os, "replace", refuse)
    with pytest.raises(UsageError, match="No space left on device"):
        write_output(str(target), "new", force=True)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_config_is_found_upwards_and_applied(project):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\nblock-on = []\nmin-score = 0\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "train.py").write_text(SYNC_LOOP)
    assert main(["pkg/train.py", "--date", "2026-01-01"]) == 0
    assert "Configuration: `" in (project / "reports" / "train.md").read_text()
    assert main(["pkg/train.py", "--isolated"]) == 1
    assert main(["pkg/train.py", "--min-score", "100"]) == 1


def test_config_error_exits_2_naming_file_and_key(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nmin-score = "high"\n')
    assert main(["train.py"]) == 2
    err = capsys.readouterr().err
    assert str(project / "pyproject.toml") in err
    assert "min-score" in err
    assert not (project / "reports").exists()


def test_explicit_config_file(project, capsys):
    custom = project / "gate.toml"
    custom.write_text('[tool.verify-perf]\nignore = ["VP203"]\n')
    assert main(["train.py", "--config", "gate.toml"]) == 0
    assert main(["train.py", "--config", "missing.toml"]) == 2
    assert "missing.toml" in capsys.readouterr().err


def fake_command(result=None, error=None):
    module = types.ModuleType("verifier.dynamic.command")
    module.seen = {}

    def add_harness_arguments(group):
        group.add_argument("--preset", default="auto")

    def options_from_args(args, thresholds):
        module.seen.update(preset=args.preset, thresholds=thresholds, chart=args.chart)
        return "options"

    def run_dynamic(options):
        if error:
            raise error
        return result

    module.add_harness_arguments = add_harness_arguments
    module.options_from_args = options_from_args
    module.run_dynamic = run_dynamic
    return module


def test_dynamic_results_join_the_report_and_a_missed_target_blocks(project, monkeypatch):
    (project / "pyproject.toml").write_text("[tool.verify-perf.thresholds]\nspeedup = 1.7\n")
    missed = make_dynamic(speedup_status=VerdictStatus.MISS, speedup=1.2)
    module = fake_command(result=missed)
    monkeypatch.setitem(sys.modules, "verifier.dynamic.command", module)
    assert main(["clean.py", "--dynamic", "--preset", "tiny", "--date", "2026-01-01"]) == 1
    assert module.seen["preset"] == "tiny"
    assert module.seen["thresholds"].min_speedup == 1.7
    assert module.seen["chart"] == os.path.join("reports", "clean.png")
    report = (project / "reports" / "clean.md").read_text()
    assert "| AMP speedup over FP32 (fp16) | 1.20x | >= 1.50x | ❌ MISS |" in report
    assert "- measured target missed: AMP speedup over FP32 (fp16): 1.20x (target >= 1.50x)" in report


def test_dynamic_without_a_harness_says_not_run(project, monkeypatch):
    monkeypatch.setitem(sys.modules, "verifier.dynamic.command", None)
    assert main(["clean.py", "--dynamic"]) == 0
    report = (project / "reports" / "clean.md").read_text()
    assert "Not run: harness unavailable" in report


def test_a_crashing_harness_still_writes_the_report_and_exits_2(project, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "verifier.dynamic.command", fake_command(error=RuntimeError("boom")))
    assert main(["clean.py", "--dynamic"]) == 2
    assert "dynamic harness crashed: RuntimeError: boom" in capsys.readouterr().err
    assert "Failed: the harness crashed (RuntimeError: boom). No figure below is measured" in (project / "reports" / "clean.md").read_text()


def test_bench_dispatches_to_the_harness_command(monkeypatch):
    module = types.ModuleType("verifier.dynamic.command")
    module.add_bench_arguments = lambda parser: parser.add_argument("--steps", type=int)
    module.run_bench = lambda args: 0 if args.steps == 3 else 9
    monkeypatch.setitem(sys.modules, "verifier.dynamic.command", module)
    assert main(["bench", "--steps", "3"]) == 0


def test_bench_without_a_harness_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "verifier.dynamic.command", None)
    assert main(["bench"]) == 2
    assert "bench` is unavailable" in capsys.readouterr().err


def test_a_markdown_report_on_standard_output_is_not_announced_as_a_file(project, capsys):
    assert main(["train.py", "--format", "markdown", "-o", "-", "--date", "2026-01-01"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("# Performance Verification Report - train\n")
    assert captured.err == ""
    assert not (project / "-").exists() and not (project / "reports").exists()
