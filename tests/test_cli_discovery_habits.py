"""Discovery as ruff users expect it: `.gitignore` and `.ignore` respected (`--no-respect-gitignore`
turns that off, a file named on the command line is always analysed), `extend-exclude`."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.snippets import SYNC
from verifier.cli import main

HEADLINE = "`synchronize()` in a loop blocks the host on every iteration"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for name in ("src/train.py", "gen/made.py", "src/scratch_1.py", "vendor/lib.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(SYNC)
    (tmp_path / ".gitignore").write_text("gen/\nscratch_*.py\n")
    (tmp_path / ".ignore").write_text("vendor/\n")
    return tmp_path


def files_shown(capsys, *argv) -> list[str]:
    assert main([*argv, "--show-files"]) == 0
    return capsys.readouterr().out.splitlines()


def findings(capsys, *argv) -> tuple[int, list[str]]:
    code = main([*argv, "--no-report", "--no-cache", "-q", "--select", "VP203"])
    return code, capsys.readouterr().out.splitlines()


def test_gitignore_and_ignore_are_respected_outside_git(project, capsys):
    assert files_shown(capsys, ".") == ["src/train.py"]
    assert files_shown(capsys, ".", "--no-respect-gitignore") == [
        "gen/made.py", "src/scratch_1.py", "src/train.py", "vendor/lib.py",
    ]
    assert findings(capsys, ".") == (1, [f"src/train.py:7:5: VP203 [HIGH] {HEADLINE}"])


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_inside_git_its_own_view_decides(project, capsys):
    subprocess.run(["git", "init", "-q", "."], check=True)
    (project / ".git" / "info" / "exclude").write_text("src/train.py\n")
    subprocess.run(["git", "add", "-f", "gen/made.py"], check=True)  # tracked: never ignored
    assert files_shown(capsys, ".") == ["gen/made.py"]
    assert files_shown(capsys, "src") == []


def test_a_file_named_on_the_command_line_is_always_analysed(project, capsys):
    assert files_shown(capsys, "gen/made.py", "src/scratch_1.py") == ["gen/made.py", "src/scratch_1.py"]
    assert findings(capsys, "gen/made.py") == (1, [f"gen/made.py:7:5: VP203 [HIGH] {HEADLINE}"])


def test_a_folder_left_out_whole_says_why_nothing_was_analysed(project, capsys):
    assert main(["gen", "--no-report", "--no-cache"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "verify-perf: warning: no Python files found under the given path(s): nothing was analysed",
        "verify-perf: note: 1 Python file left out by .gitignore or .ignore; --no-respect-gitignore analyses them",
    ]


def test_ignored_files_lend_no_heat(project, capsys):
    # A helper is step code only because an ignored file's loop calls it: that loop does not count.
    (project / "src" / "helpers.py").write_text("import torch\n\ndef wait():\n    torch.cuda.synchronize()\n")
    (project / "gen" / "made.py").write_text(
        "from src.helpers import wait\n\nfor batch in loader:\n    optimizer.step()\n    wait()\n"
    )
    (project / "pyproject.toml").write_text("[tool.verify-perf]\n")
    assert findings(capsys, "src/helpers.py") == (0, [])
    code, lines = findings(capsys, "src/helpers.py", "--no-respect-gitignore")
    assert code == 1 and lines[0].startswith("src/helpers.py:4:5: VP203 [HIGH]")


def test_respect_gitignore_in_the_config_and_the_flag_over_it(project, capsys):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\nrespect-gitignore = false\n")
    assert len(files_shown(capsys, ".")) == 4
    assert files_shown(capsys, ".", "--respect-gitignore") == ["src/train.py"]
    assert main([".", "--show-settings"]) == 0
    assert "respect-gitignore = false" in capsys.readouterr().out.splitlines()


def test_extend_exclude_in_the_config_and_on_the_command_line(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nexclude = ["legacy"]\nextend-exclude = ["src/scratch_*"]\n')
    assert files_shown(capsys, ".", "--no-respect-gitignore") == ["gen/made.py", "src/train.py", "vendor/lib.py"]
    assert files_shown(capsys, ".", "--no-respect-gitignore", "--extend-exclude", "vendor,gen") == ["src/train.py"]
    assert main([".", "--show-settings"]) == 0
    assert f"exclude = legacy, {project}/src/scratch_*" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(("value", "shown"), [('"vendor"', "str 'vendor'"), ("[1]", "list [1]"), ("true", "bool True")])
def test_extend_exclude_of_the_wrong_type_is_a_usage_error(project, capsys, value, shown):
    (project / "pyproject.toml").write_text(f"[tool.verify-perf]\nextend-exclude = {value}\n")
    assert main([".", "--no-report"]) == 2
    assert capsys.readouterr().err == (
        f"verify-perf: error: {project / 'pyproject.toml'}: [tool.verify-perf] extend-exclude: "
        f"expected a list of strings, got {shown}\n"
    )


def test_respect_gitignore_of_the_wrong_type_is_a_usage_error(project, capsys):
    (project / "pyproject.toml").write_text('[tool.verify-perf]\nrespect-gitignore = "no"\n')
    assert main([".", "--no-report"]) == 2
    assert capsys.readouterr().err == (
        f"verify-perf: error: {project / 'pyproject.toml'}: [tool.verify-perf] respect-gitignore: "
        "expected true or false, got str 'no'\n"
    )
