"""Running many files: processes, the results cache, the pre-filter and the per-file time limit."""

from __future__ import annotations

import shutil
from pathlib import Path

from verifier.config import Settings
from verifier.static.runner import analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def make_tree(root: Path, copies: int = 12) -> None:
    for index in range(copies):
        shutil.copy(EXAMPLES / "bad_train.py", root / f"bad_{index:02d}.py")
        shutil.copy(EXAMPLES / "good_train.py", root / f"good_{index:02d}.py")
    (root / "notes.py").write_text("GREETING = 'hello'\n")


def rows(result):
    return [(f.path, f.line, f.column, f.code, f.severity.name, f.message) for f in result.findings]


def test_two_processes_give_the_same_findings_as_one(tmp_path):
    make_tree(tmp_path)
    single = analyze_paths([str(tmp_path)], Settings(jobs=1))
    double = analyze_paths([str(tmp_path)], Settings(jobs=2))
    assert rows(single) == rows(double)
    per_copy = len(analyze_paths([str(EXAMPLES / "bad_train.py")], Settings()).findings)
    assert per_copy >= 15 and len(rows(single)) == 12 * per_copy
    assert [f.path for f in single.files] == [f.path for f in double.files]


def test_cache_hits_on_unchanged_files_and_misses_on_edits(tmp_path):
    project, cache_dir = tmp_path / "project", tmp_path / "cache"
    project.mkdir()
    make_tree(project, copies=2)
    settings = Settings(cache_dir=str(cache_dir))
    cold = analyze_paths([str(project)], settings)
    warm = analyze_paths([str(project)], settings)
    assert rows(cold) == rows(warm)
    assert (cache_dir / ".gitignore").read_text().endswith("*\n")

    edited = project / "good_00.py"
    edited.write_text(edited.read_text() + (
        "\ndef extra(model, loader, optimizer, device):\n    for x in loader:\n"
        "        loss = model(x.to(device, non_blocking=True)).sum()\n        loss.backward()\n"
        "        optimizer.step()\n        optimizer.zero_grad()\n        print(loss.item())\n"
    ))
    after_edit = analyze_paths([str(project)], settings)
    new = [r for r in rows(after_edit) if r not in rows(cold)]
    assert [(Path(r[0]).name, r[3], r[4]) for r in new] == [("good_00.py", "VP201", "MEDIUM")]


def test_files_without_any_rule_token_are_not_parsed(tmp_path):
    (tmp_path / "plain.py").write_text("SCALE = 2\nNAMES = ('a', 'b')\n")
    (tmp_path / "broken_plain.py").write_text("SCALE = (2\n")
    # A function may carry a step's heat to the module it calls: never skipped.
    (tmp_path / "relay.py").write_text("from ops import wait\n\n\ndef relay(x):\n    return wait(x)\n")
    (tmp_path / "train.py").write_text("import torch\n")
    result = analyze_paths([str(tmp_path)], Settings())
    assert {Path(f.path).name: f.skipped for f in result.files} == {
        "broken_plain.py": True, "plain.py": True, "relay.py": False, "train.py": False,
    }
    parsed_everything = analyze_paths([str(tmp_path)], Settings(prefilter=False))
    assert [(Path(f.path).name, f.code) for f in parsed_everything.findings] == [("broken_plain.py", "VP900")]


def test_a_file_over_the_time_limit_becomes_one_vp900(tmp_path):
    body = "import torch\n" + "".join(f"def f{i}(x):\n    return x.item() + {i}\n" for i in range(3000))
    (tmp_path / "huge.py").write_text(body)
    result = analyze_paths([str(tmp_path)], Settings(file_timeout=0.01))
    assert [(f.code, f.line) for f in result.findings] == [("VP900", 1)]
    assert "time limit of 0.01 s" in result.findings[0].message


def test_json_output_is_identical_across_runs_processes_and_cache(tmp_path, capsys, monkeypatch):
    from verifier.cli import main

    (tmp_path / "src").mkdir()
    make_tree(tmp_path / "src", copies=3)
    monkeypatch.chdir(tmp_path)
    outputs = []
    for extra in (["-j", "1", "--no-cache"], ["-j", "2", "--no-cache"], ["-j", "2"], ["-j", "2"]):
        assert main(["src", "--format", "json", "--no-report", *extra]) == 1
        outputs.append(capsys.readouterr().out)
    assert len(set(outputs)) == 1
    assert (tmp_path / ".verify_perf_cache").is_dir()


# Each under the per-file limit, together as long as they like: a 20,000-attribute chain takes
# libcst tens of seconds to parse.
SLOW = "import torch\ny = x" + ".a" * 20_000 + "\n"
QUICK = (
    "import torch\n\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    optimizer.step()\n"
    "    torch.cuda.synchronize()\n"
)


def test_files_not_done_within_the_runs_time_limit_become_blocking_vp900s(tmp_path):
    import time

    from verifier.static.runner import _cacheable

    (tmp_path / "a_quick.py").write_text(QUICK)
    for name in ("b_slow.py", "c_slow.py"):
        (tmp_path / name).write_text(SLOW)
    settings = Settings(file_timeout=120, run_timeout=4, select=("VP203", "VP900"), prefilter=False)
    started = time.monotonic()
    result = analyze_paths([str(tmp_path)], settings)
    assert time.monotonic() - started < 4 + 10
    reason = "not analysed: the run reached its time limit of 4 s first (--run-timeout)"
    assert [(Path(f.path).name, f.line, f.code, f.severity.name, f.message) for f in result.findings] == [
        ("a_quick.py", 7, "VP203", "HIGH", result.findings[0].message),
        ("b_slow.py", 1, "VP900", "HIGH", reason),
        ("c_slow.py", 1, "VP900", "HIGH", reason),
    ]
    # Cut off by a busy machine, not by what the cache key covers: tried again next run.
    assert [_cacheable(r, settings) for r in result.files] == [True, False, False]
