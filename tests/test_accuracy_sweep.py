"""scripts/accuracy_sweep.py: the GPU-time experiment that chose the gpu preset's task, run here on
CPU with the tiny preset (same sessions as the bench's accuracy runs)."""

from __future__ import annotations

import json

import pytest

from tests.scripts import script_module



@pytest.fixture(scope="module")
def sweep():
    with script_module("accuracy_sweep") as module:
        yield module


def test_the_sweep_trains_each_setting_and_confirms_the_one_whose_worst_seed_did_best(sweep, tmp_path, capsys):
    output = tmp_path / "sweep.jsonl"
    code = sweep.main([
        "--preset", "tiny", "--device", "cpu", "--modes", "bf16", "--periods", "4", "--learning-rates", "1e-2", "1e-4",
        "--seeds", "0", "1", "--steps", "40", "--eval-every", "20", "--confirm-modes", "fp32", "-o", str(output),
    ])
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    printed = capsys.readouterr().out
    assert code == 0
    # 2 settings x 2 seeds x 2 evaluations, then the confirmed setting in fp32: 2 seeds x 2.
    assert [(r["mode"], r["learning_rate"], r["seed"], r["step"]) for r in rows] == [
        ("bf16", 1e-2, 0, 20), ("bf16", 1e-2, 0, 40), ("bf16", 1e-2, 1, 20), ("bf16", 1e-2, 1, 40),
        ("bf16", 1e-4, 0, 20), ("bf16", 1e-4, 0, 40), ("bf16", 1e-4, 1, 20), ("bf16", 1e-4, 1, 40),
        ("fp32", 1e-2, 0, 20), ("fp32", 1e-2, 0, 40), ("fp32", 1e-2, 1, 20), ("fp32", 1e-2, 1, 40),
    ]
    assert [r["ceiling"] for r in rows] == [pytest.approx(1 - 0.2 + 0.2 / 32)] * 12
    final = {(r["mode"], r["learning_rate"], r["seed"]): r["accuracy"] for r in rows if r["step"] == 40}
    # At 1e-2 the tiny task is learned in 40 steps; at 1e-4 it is not, so 1e-2 is confirmed.
    assert min(final[("bf16", 1e-2, s)] for s in (0, 1)) > 0.5 > max(final[("bf16", 1e-4, s)] for s in (0, 1))
    assert "# confirming period=4 lr=0.01 in fp32" in printed
    table = printed[printed.index("| mode |"):].splitlines()
    assert table[0] == "| mode | period | learning rate | accuracy at step 40, per seed | seeds past half the ceiling |"
    assert [line.split(" | ")[-1] for line in table[2:]] == ["2 of 2 |", "0 of 2 |", "2 of 2 |"]


def test_a_deadline_skips_the_runs_not_yet_started(sweep, tmp_path, capsys):
    code = sweep.main(["--preset", "tiny", "--device", "cpu", "--seeds", "0", "1", "--steps", "2", "--deadline", "0"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "# deadline: skipped bf16 period=4 lr=0.01 seed=0" in printed
    assert "# deadline: skipped bf16 period=4 lr=0.01 seed=1" in printed
    assert printed.rstrip().endswith("|---|---|---|---|---|")


def test_the_gpu_preset_on_cpu_or_an_unknown_preset_is_a_usage_error(sweep, capsys):
    assert sweep.main(["--preset", "gpu", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == "error: --preset gpu needs a CUDA device; use --preset tiny on CPU\n"
    assert sweep.main(["--preset", "huge", "--device", "cpu"]) == 2
    assert capsys.readouterr().err == "error: unknown preset 'huge' (expected one of tiny, gpu)\n"


def test_an_unknown_mode_or_an_unwritable_output_is_a_usage_error(sweep, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        sweep.main(["--preset", "tiny", "--device", "cpu", "--modes", "fp8"])
    assert exited.value.code == 2 and "invalid choice: 'fp8'" in capsys.readouterr().err
    missing = tmp_path / "no" / "such" / "folder" / "sweep.jsonl"
    assert sweep.main(["--preset", "tiny", "--device", "cpu", "--steps", "1", "-o", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: cannot write {missing}: No such file or directory\n"
    assert not missing.parent.exists()
