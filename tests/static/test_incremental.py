"""An edit that leaves a file's project inputs equal reuses the last run's project pass, and says
exactly what a cold run says; any other edit runs the whole pass."""

from __future__ import annotations

import random

import pytest

from tests.realcode.random_edits import edit
from tests.static.test_cache_identity import NEW_FILE, everything, write_project
from verifier.config import Settings
from verifier.static import runner
from verifier.static.runner import analyze_paths


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    write_project(root)
    return root


@pytest.fixture
def project_passes(monkeypatch):
    """How many times the whole project pass (call binding over every file) ran."""
    calls = []
    bind = runner.bind_project
    monkeypatch.setattr(runner, "bind_project", lambda models: (calls.append(len(models)), bind(models))[1])
    return calls


def append(path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def hot_findings(result) -> list[tuple[str, int, str, str, str]]:
    return [(f.path.rsplit("/", 1)[-1], f.line, f.code, f.severity.name, f.heat.name) for f in result.findings]


@pytest.mark.parametrize(
    "change",
    [
        ("helpers.py", None, "# a note for reviewers\n"),
        ("train.py", None, "# a note for reviewers\n"),
        ("model.py", None, "# a note for reviewers\n"),
        # helpers.py has no loop of its own: its summary holds no lines, its findings get theirs
        # when the project pass judges it again.
        ("helpers.py", "import torch\n", "import torch\n# moved\n"),
        # train.py holds the step loop: every line below moves, and so do the other files' traces.
        ("train.py", "import torch\n", "import torch\n# moved\n\n"),
        ("train.py", "    history = []\n", "    # a history of losses\n    history = []\n"),
    ],
)
def test_an_edit_that_keeps_project_inputs_reuses_the_project_pass(project, tmp_path, project_passes, change):
    name, old, new = change
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    first = analyze_paths([str(project)], cached)
    assert project_passes == [3]
    source = (project / name).read_text()
    (project / name).write_text(source + new if old is None else source.replace(old, new, 1))
    again = analyze_paths([str(project)], cached)
    assert project_passes == [3]  # the edited file gave the project what it gave before
    assert everything(again) == everything(analyze_paths([str(project)], Settings()))
    if old is None:
        assert everything(again) == everything(first)


def test_a_file_the_project_pass_judged_again_is_judged_with_the_facts_it_read(project, tmp_path, project_passes):
    # `log_loss` is hot only through train.py's loop: helpers.py is judged again by the project pass.
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    analyze_paths([str(project)], cached)
    source = (project / "helpers.py").read_text()
    (project / "helpers.py").write_text(source.replace('print(f"loss {loss.item():.3f}")', 'print(f"loss: {loss.item():.4f}")'))
    again = analyze_paths([str(project)], cached)
    assert project_passes == [3]
    assert everything(again) == everything(analyze_paths([str(project)], Settings()))
    # Step heat reaches helpers.py only through train.py's loop (its `--log-every` of 1 by default
    # logs every step).
    assert hot_findings(again)[:3] == [
        ("helpers.py", 5, "VP102", "LOW", "STEP"), ("helpers.py", 9, "VP201", "MEDIUM", "STEP"), ("helpers.py", 10, "VP203", "LOW", "STEP"),
    ]


@pytest.mark.parametrize(
    "change",
    [
        ("train.py", "history.append(loss)", "history.append(loss.item())"),  # a call added
        ("helpers.py", "    torch.cuda.synchronize()\n", ""),  # a finding's call removed
    ],
)
def test_an_edit_that_changes_project_inputs_runs_the_whole_pass(project, tmp_path, project_passes, change):
    name, old, new = change
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    analyze_paths([str(project)], cached)
    source = (project / name).read_text()
    assert old in source
    (project / name).write_text(source.replace(old, new, 1))
    again = analyze_paths([str(project)], cached)
    assert len(project_passes) == 2
    assert everything(again) == everything(analyze_paths([str(project)], Settings()))


def test_a_new_file_is_a_new_record(project, tmp_path, project_passes):
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    analyze_paths([str(project)], cached)
    (project / "extra.py").write_text(NEW_FILE)
    again = analyze_paths([str(project)], cached)
    assert project_passes == [3, 4]
    assert everything(again) == everything(analyze_paths([str(project)], Settings()))


@pytest.mark.parametrize("seed", range(4))
def test_edits_that_keep_lines_in_place_equal_cold_runs(project, tmp_path, seed):
    # Comments at the end of a line or of a file, and string edits: most keep every summary equal.
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    rng = random.Random(seed)
    analyze_paths([str(project)], cached)
    done = []
    for n in range(8):
        done.append(edit(project, rng, n, kinds=("trailing comment", "appended comment", "sync")))
        assert everything(analyze_paths([str(project)], cached)) == everything(analyze_paths([str(project)], Settings())), done
