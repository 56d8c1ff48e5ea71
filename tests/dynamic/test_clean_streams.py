"""Standard output carries only the chosen format while the measured code prints: what the entry
prints (through Python or straight to descriptor 1) goes to standard error."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from verifier.cli import main
from verifier.dynamic.streams import user_output_to_stderr

pytestmark = pytest.mark.usefixtures("one_thread")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAST = ["--device", "cpu", "--modes", "fp32,bf16", "--warmup", "1", "--steps", "1", "--repeats", "2", "--max-repeats", "2",
        "--sync-steps", "1", "--accuracy-steps", "2", "--accuracy-seeds", "2", "--time-budget", "300", "--threads", "1"]
ENTRY = ["--entry", "entry_points:prints_everywhere"]


@pytest.fixture
def project(tmp_path, monkeypatch, entry_fixtures):
    shutil.copy(EXAMPLES / "good_train.py", tmp_path / "good_train.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_prints_went_to_stderr(err: str) -> None:
    assert "building the model\n" in err and "native library banner\n" in err and "loss computed\n" in err


def test_bench_json_stdout_is_json_while_the_entry_prints(project, capfd):
    assert main(["bench", *ENTRY, *FAST, "--json"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["workload"]["name"] == "entry_points:prints_everywhere"
    assert_prints_went_to_stderr(err)


def test_bench_table_stdout_holds_only_the_table(project, capfd):
    assert main(["bench", *ENTRY, *FAST]) == 0
    out, err = capfd.readouterr()
    assert out.startswith("entry entry_points:prints_everywhere on cpu: ")
    assert "building the model" not in out and "loss computed" not in out and "banner" not in out
    assert_prints_went_to_stderr(err)


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_dynamic_check_stdout_is_the_format_while_the_entry_prints(project, capfd, output_format):
    code = main(["good_train.py", "--dynamic", *ENTRY, *FAST, "--format", output_format, "--no-report"])
    out, err = capfd.readouterr()
    assert code in (0, 1)
    document = json.loads(out)
    assert ("dynamic" in document) if output_format == "json" else document["version"] == "2.1.0"
    assert_prints_went_to_stderr(err)
    assert "--dynamic without --entry" not in err  # the user's step was measured: no calibration notice


def test_both_levels_are_restored_afterwards(capfd):
    import os

    before = sys.stdout
    with user_output_to_stderr():
        print("inside")
        os.write(1, b"native inside\n")
    print("outside")
    os.write(1, b"native outside\n")
    assert sys.stdout is before
    out, err = capfd.readouterr()
    assert (out, err) == ("outside\nnative outside\n", "inside\nnative inside\n")
