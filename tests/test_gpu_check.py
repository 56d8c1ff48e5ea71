"""scripts/gpu_check.py: the prepared GPU check. Without CUDA it runs as a dry run of the same
code on CPU with the tiny preset; the GPU table's cells are checked on a CUDA-shaped result."""

from __future__ import annotations

import json

import pytest

from tests.scripts import script_module

MIB = 2**20


@pytest.fixture(scope="module")
def gpu_check():
    with script_module("gpu_check") as module:
        yield module


MARKED_TESTS = '''
import pytest

@pytest.mark.gpu
def test_on_the_gpu():
    pytest.skip("needs a CUDA device")

def test_not_marked():
    raise AssertionError("only gpu-marked tests run")
'''


def test_the_dry_run_writes_the_table_from_the_same_code(gpu_check, tmp_path, capsys):
    marked = tmp_path / "test_marked.py"
    marked.write_text(MARKED_TESTS)
    output = tmp_path / "check.md"
    logs = tmp_path / "logs"
    code = gpu_check.main(["--dry-run", "--compile", "off", "--tests", str(marked), "-o", str(output), "--log-dir", str(logs)])
    table = output.read_text()
    kept = {path.name for path in logs.iterdir()}
    assert {"bench_compile_off.log", "bench_eager.json", "gpu_marked_tests.log"} <= kept
    bench_log = (logs / "bench_compile_off.log").read_text().splitlines()
    assert bench_log[0].endswith("-m verifier bench --preset tiny --device cpu --time-budget 5 -o " + str(logs / "bench_eager.json") + " --force")
    assert bench_log[1].startswith("# exit code 0 after ")
    assert json.loads((logs / "bench_eager.json").read_text())["modes"][0]["mode"] == "fp32"
    assert "1 skipped, 1 deselected" in (logs / "gpu_marked_tests.log").read_text()
    assert code == 0 and capsys.readouterr().out == table
    lines = table.splitlines()
    assert lines[0] == "# GPU check (dry run on CPU: the same code, the tiny preset)"
    assert lines[2].startswith("- Device: ") and "(cpu); driver n/a; CUDA n/a; torch " in lines[2]
    assert lines[3].startswith("- `gpu`-marked tests: 1 skipped, 1 deselected")
    assert lines[4].startswith("- Bench, compile off: `verify-perf bench --preset tiny`, ")
    assert "budget 5.0 s" in lines[4]
    header = "| " + " | ".join(gpu_check.HEADER) + " |"
    rows = lines[lines.index(header) + 2:lines.index(header) + 4]
    assert [row.split(" | ")[:2] for row in rows] == [["| off", "fp32"], ["| off", "bf16"]]
    fp32, bf16 = (row.split(" | ") for row in rows)
    assert fp32[3:5] == ["n/m", "—"]  # no TF32 on CPU; strict FP32 is itself
    assert bf16[4].endswith(")") and "x (" in bf16[4]
    assert fp32[9] == bf16[9] == "n/m (no NVML) |"


@pytest.mark.slow
def test_the_full_dry_run_with_compile_and_the_real_gpu_tests(gpu_check, tmp_path):
    output = tmp_path / "check.md"
    code = gpu_check.main(["--dry-run", "--compile", "both", "-o", str(output)])
    table = output.read_text()
    assert "- Bench, compile on: `verify-perf bench --preset tiny --compile --accuracy-seeds 0`" in table
    assert "| on | fp32 |" in table and "| on | bf16 |" in table
    assert code == 0, table


def cuda_mode(name: str, median: float, **extra) -> dict:
    samples = [median * factor for factor in (0.99, 1.0, 1.01, 1.0, 1.0)]
    return {
        "mode": name, "error": None,
        "step_time": {"median_ms": median, "samples_ms": samples},
        "mfu": extra.get("mfu"),
        "memory_split": {"peak_bytes": 2000 * MIB, "parameters_bytes": 400 * MIB, "gradients_bytes": 400 * MIB,
                         "optimizer_state_bytes": 800 * MIB, "activations_other_bytes": 400 * MIB, "estimated": False},
        "accuracy": 0.8, "accuracy_runs": [{"accuracy": 0.79}, {"accuracy": 0.8}, {"accuracy": 0.81}],
        "user_syncs_per_step": 0.0, "library_syncs_per_step": 0.0,
        "utilization": {"gpu_util_percent_mean": 97.0, "gpu_util_percent_max": 100.0, "memory_used_bytes_max": 30000 * MIB},
    }


def test_the_gpu_table_cells(gpu_check):
    result = {"modes": [
        cuda_mode("fp32", 400.0, mfu=0.41), cuda_mode("tf32", 160.0, mfu=0.25), cuda_mode("bf16", 80.0, mfu=0.31),
        {"mode": "fp16", "dtype": "float16", "error": "CUDA out of memory during warm-up: boom"},
    ]}
    step = gpu_check.Step("bench", ["x"], returncode=0, result=result)
    rows = gpu_check.bench_rows(step, compiled=True)
    assert rows[2] == (
        "on", "bf16", "80.00 (79.20–80.80)", "2.00x (1.98–2.02)", "5.00x (4.95–5.05)", "31.0%",
        "2,000: 400 / 400 / 800 / 400", "0.8000 (0.7900–0.8100, 3 seeds)", "0 / 0", "97 % (max 100 %), 30,000 MiB used",
    )
    assert rows[1][3:5] == ("—", "2.50x (2.48–2.53)")
    assert rows[3][:3] == ("on", "fp16", "failed: CUDA out of memory during warm-up: boom")
    timed_out = gpu_check.Step("bench", ["x"], timed_out=True, seconds=190.0)
    assert gpu_check.bench_rows(timed_out, compiled=False)[0][:3] == ("off", "—", "timed out after 190 s")
