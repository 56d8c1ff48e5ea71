"""One file cannot take the run down: crashes, time-outs, memory blow-ups and deep code each
become one VP900 for that file, every other file keeps its findings, workers die with the run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifier.config import Settings
from verifier.rules import all_rules
from verifier.static import parallel
from verifier.static.runner import analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CODES = [rule.code for rule in all_rules()]


def hostile(folder: Path) -> dict[str, str]:
    """Valid Python that crashes libcst's native parser (issue 14), by file name. (The issue's
    1,500 unclosed brackets crash it too, but Python rejects them first: a syntax error.)"""
    cases = {
        "unary.py": "import torch\nx = " + "-" * 100_000 + "x\n",
        "and_chain.py": "import torch\nOK = " + " and ".join(["True"] * 10_000) + "\n",
    }
    for name, text in cases.items():
        (folder / name).write_text(text)
    return cases


def rows(result):
    return [(Path(f.path).name, f.line, f.code, f.severity.name) for f in result.findings]


def bad_train_rows(name: str = "bad_train.py"):
    alone = analyze_paths([str(EXAMPLES / "bad_train.py")], Settings())
    return [(name, line, code, severity) for _, line, code, severity in rows(alone)]


def test_a_parser_crash_is_one_vp900_and_other_files_keep_their_findings(tmp_path):
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "bad_train.py")
    hostile(tmp_path)
    result = analyze_paths([str(tmp_path)], Settings(jobs=2))
    crashes = [(name, line, code, severity) for name, line, code, severity in rows(result) if code == "VP900"]
    assert crashes == [("and_chain.py", 1, "VP900", "HIGH"), ("unary.py", 1, "VP900", "HIGH")]
    assert all("the parser crashed (SIGSEGV)" in f.message for f in result.findings if f.code == "VP900")
    assert [r for r in rows(result) if r[0] == "bad_train.py"] == bad_train_rows()
    assert result.internal_errors == []


def test_with_many_files_and_two_workers_a_crash_loses_only_its_own_file(tmp_path):
    for index in range(12):
        shutil.copy(EXAMPLES / "bad_train.py", tmp_path / f"copy_{index:02d}.py")
    (tmp_path / "copy_05_crash.py").write_text("x = " + " and ".join(["True"] * 10_000) + "\n")
    result = analyze_paths([str(tmp_path)], Settings(jobs=2, prefilter=False))
    expected = len(bad_train_rows())
    by_file: dict[str, list] = {}
    for name, *rest in rows(result):
        by_file.setdefault(name, []).append(rest)
    assert by_file.pop("copy_05_crash.py") == [[1, "VP900", "HIGH"]]
    assert sorted(by_file) == [f"copy_{index:02d}.py" for index in range(12)]
    assert all(len(found) == expected for found in by_file.values())


def test_native_parsing_past_the_time_limit_is_stopped_on_time(tmp_path):
    # libcst's parser is super-linear in operator chains: this one parses for many seconds, in
    # native code that the worker's own alarm cannot interrupt.
    (tmp_path / "slow.py").write_text("import torch\nx = " + " + ".join(["a"] * 4000) + "\n")
    shutil.copy(EXAMPLES / "bad_train.py", tmp_path / "bad_train.py")
    started = time.monotonic()
    result = analyze_paths([str(tmp_path)], Settings(file_timeout=0.5))
    assert time.monotonic() - started < 10
    assert [r for r in rows(result) if r[0] == "slow.py"] == [("slow.py", 1, "VP900", "HIGH")]
    assert "per-file time limit of 0.5 s" in [f for f in result.findings if f.code == "VP900"][0].message
    assert [r for r in rows(result) if r[0] == "bad_train.py"] == bad_train_rows()


def test_a_memory_blow_up_stops_at_the_worker_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "WORKER_MEMORY", 256 << 20)
    (tmp_path / "huge_list.py").write_text("import torch\nx = [" + "1," * 1_000_000 + "]\n")
    pool = parallel.AnalysisPool()
    try:
        [result] = pool.analyse([str(tmp_path / "huge_list.py")], CODES, Settings(file_timeout=120))
    finally:
        pool.close()
    assert [(f.code, f.severity.name) for f in result.findings] == [("VP900", "HIGH")]
    message = result.findings[0].message
    assert "memory" in message and ("SIGABRT" in message or "ran out of memory" in message)


def test_deep_but_valid_code_is_analysed_in_full(tmp_path):
    # A 500-branch elif and a 500-term boolean chain used to end as RecursionError.
    body = (EXAMPLES / "bad_train.py").read_text()
    elif_chain = "def dispatch(x):\n    if x == 0:\n        return 0\n" + "".join(
        f"    elif x == {i}:\n        return {i}\n" for i in range(1, 500)
    )
    (tmp_path / "bad_train.py").write_text(body + "\nOK = " + " and ".join(["True"] * 500) + "\n" + elif_chain)
    result = analyze_paths([str(tmp_path / "bad_train.py")], Settings())
    assert rows(result) == bad_train_rows()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux's")
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_the_run(tmp_path, stop):
    for index in range(2):
        (tmp_path / f"slow_{index}.py").write_text("import torch\nx = " + " + ".join(["a"] * 6000) + "\n")
    run = subprocess.Popen(
        [sys.executable, "-m", "verifier", str(tmp_path), "--no-cache", "--no-report", "-j", "2", "--isolated"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        workers: list[int] = []
        while time.monotonic() < deadline and not workers:
            time.sleep(0.1)
            workers = _children(run.pid)
        assert workers, "no worker started"
        run.send_signal(stop)
        run.wait(10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(map(_alive, workers)):
            time.sleep(0.05)
        assert not any(map(_alive, workers))
    finally:
        run.kill()
        run.wait()


def test_a_worker_analyses_with_the_cycle_collector_paused_and_restores_it(monkeypatch):
    """Paused for the file (its tree is freed by reference counting), back as it was after,
    also when the analysis raises."""
    import gc

    from verifier.static import engine

    seen: list[bool] = []

    def analyse(path, rules, settings, external=None):
        seen.append(gc.isenabled())
        if path == "raises.py":
            raise RuntimeError("boom")
        return path

    monkeypatch.setattr(engine, "analyze_file", analyse)
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        assert parallel.analyse_without_cycle_collection("train.py", [], Settings(), None) == "train.py"
        assert gc.isenabled()
        with pytest.raises(RuntimeError):
            parallel.analyse_without_cycle_collection("raises.py", [], Settings(), None)
        assert gc.isenabled()
        gc.disable()
        parallel.analyse_without_cycle_collection("train.py", [], Settings(), None)
        assert not gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()
    assert seen == [False, False, False]
