"""The GitHub Action (action.yml): its steps run on this machine through scripts/run_action_steps.py,
end to end on a scratch pull request (scripts/run_action_locally.sh), and its merge-base step on
the events it meets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.git_repo import git

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
LOCAL_RUN = ROOT / "scripts" / "run_action_locally.sh"
STEP_RUNNER = ROOT / "scripts" / "run_action_steps.py"

needs_git_and_bash = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)


def rev_parse(repo: Path, ref: str) -> str:
    return subprocess.run(["git", "rev-parse", ref], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def step(name: str) -> dict:
    (found,) = [s for s in action()["runs"]["steps"] if s.get("name") == name]
    return found


def test_the_action_is_composite_with_the_documented_inputs_and_outputs():
    metadata = action()
    assert metadata["runs"]["using"] == "composite"
    assert set(metadata["inputs"]) == {"version", "install", "paths", "base", "sarif", "sarif-category", "task", "args"}
    assert set(metadata["outputs"]) == {"decision", "exit-code", "base", "sarif-file", "report-file"}
    uses = [s["uses"] for s in metadata["runs"]["steps"] if "uses" in s]
    assert uses == ["github/codeql-action/upload-sarif@v3"]
    documented = (ROOT / "docs" / "github-actions.md").read_text(encoding="utf-8")
    for name in [*metadata["inputs"], *metadata["outputs"]]:
        assert f"| `{name}` |" in documented, name


def test_every_run_step_takes_its_inputs_from_the_environment():
    """Expressions go into `env:`, never into the script, so an input cannot inject shell code."""
    for each in action()["runs"]["steps"]:
        if "run" in each:
            assert "${{" not in each["run"], each["name"]
            assert each["shell"] == "bash"


def run_merge_base_step(repo: Path, tmp_path: Path, **env: str) -> tuple[int, str, str]:
    script = tmp_path / "merge_base.sh"
    script.write_text(step("Find the merge base")["run"], encoding="utf-8")
    output = tmp_path / "github_output"
    output.write_text("")
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment.update({"GITHUB_OUTPUT": str(output), "INPUT_BASE": "", **env})
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=repo, env=environment, capture_output=True, text=True)
    base = next(line.split("=", 1)[1] for line in output.read_text().splitlines() if line.startswith("base="))
    return done.returncode, base, done.stdout


@pytest.fixture
def pull_request(tmp_path):
    """origin (bare) with main; a clone on the merge of a feature branch, as actions/checkout leaves it."""
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    git(tmp_path, "init", "-q", "-b", "main", str(work))
    git(work, "remote", "add", "origin", str(origin))
    (work / "a.py").write_text("x = 1\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "base")
    git(work, "push", "-q", "origin", "main")
    git(work, "checkout", "-q", "-b", "feature")
    (work / "a.py").write_text("x = 2\n")
    git(work, "commit", "-qam", "change")
    git(work, "checkout", "-q", "--detach", "main")
    git(work, "merge", "-q", "--no-ff", "--no-edit", "feature")
    return work


@needs_git_and_bash
def test_a_pull_request_is_judged_against_the_merge_base(pull_request, tmp_path):
    main_tip = rev_parse(pull_request, "origin/main")
    code, base, _ = run_merge_base_step(pull_request, tmp_path, GITHUB_BASE_REF="main")
    assert (code, base) == (0, main_tip)


@needs_git_and_bash
def test_a_push_is_judged_against_the_parent_and_a_first_commit_whole(tmp_path):
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    code, base, said = run_merge_base_step(repo, tmp_path)
    assert (code, base) == (0, "")
    assert "::notice title=verify-perf::HEAD has no parent: judging the whole tree" in said
    first = rev_parse(repo, "HEAD")
    (repo / "a.py").write_text("x = 2\n")
    git(repo, "commit", "-qam", "second")
    assert run_merge_base_step(repo, tmp_path)[:2] == (0, first)
    assert run_merge_base_step(repo, tmp_path, INPUT_BASE="v0.0.9")[:2] == (0, "v0.0.9")


@needs_git_and_bash
def test_no_merge_base_judges_the_whole_tree_and_says_so(pull_request, tmp_path):
    code, base, said = run_merge_base_step(pull_request, tmp_path, GITHUB_BASE_REF="no-such-branch")
    assert (code, base) == (0, "")
    assert "::warning title=verify-perf::no merge base of origin/no-such-branch and HEAD" in said


def run_locally(tmp_path: Path, *inputs: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment.update({
        "TMPDIR": str(tmp_path), "PYTHON": sys.executable,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")]),
        "PIP_CONSTRAINT": str(ROOT / "constraints.txt"),
    })
    return subprocess.run(["bash", str(LOCAL_RUN), *(f"--input={item}" for item in inputs)],
                          env=environment, capture_output=True, text=True, timeout=600)


def check_the_block(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert ("::error file=src/train.py,line=12,endLine=12,col=9,title=VP203 synchronize-in-loop [HIGH]::"
            "`synchronize()` in a loop blocks the host on every iteration%0Anote: runs every step: "
            "inside the step loop at src/train.py:6 (iterates loader, calls optimizer.step())") in out
    assert "skipped locally: would run github/codeql-action/upload-sarif@v3" in out
    assert "::error title=verify-perf::BLOCK: see the annotations and the job summary" in out
    assert "  decision: BLOCK\n  exit-code: 1\n" in out
    sarif_line = next(line for line in out.splitlines() if line.startswith("SARIF: "))
    sarif = Path(sarif_line.removeprefix("SARIF: "))
    (result,) = json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
    assert result["ruleId"] == "VP203"
    assert result["message"]["text"].endswith("inside the step loop at [src/train.py:6](1) "
                                              "(iterates loader, calls optimizer.step())")
    summary = Path(next(line for line in out.splitlines() if line.startswith("job summary: ")).removeprefix("job summary: "))
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# Performance Verification Report - pr-1\n")
    assert "**Status: BLOCK**" in text
    assert out.rstrip().endswith("action exit status: 1")


@needs_git_and_bash
def test_the_action_runs_locally_with_verify_perf_on_path(tmp_path):
    check_the_block(run_locally(tmp_path, "install=false"))


@pytest.mark.slow
@needs_git_and_bash
def test_the_action_runs_locally_end_to_end_installing_this_checkout(tmp_path):
    """The install step too: this checkout into a fresh venv, as `uses: owner/verify-perf@tag` does."""
    done = run_locally(tmp_path)
    check_the_block(done)
    venv = next(tmp_path.glob("verify-perf-action.*/runner-temp/verify-perf-venv"))
    assert (venv / "bin" / "verify-perf").exists()


def write_action(folder: Path, steps: list[dict], **extra) -> Path:
    path = folder / "action.yml"
    path.write_text(yaml.safe_dump({"name": "t", "description": "t", **extra,
                                    "runs": {"using": "composite", "steps": steps}}))
    return path


def run_steps(tmp_path: Path, path: Path, *args: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    environment["RUNNER_TEMP"] = str(tmp_path / "temp")
    return subprocess.run([sys.executable, str(STEP_RUNNER), str(path), *args], cwd=tmp_path,
                          env=environment, capture_output=True, text=True)


@needs_git_and_bash
def test_the_step_runner_follows_outputs_conditions_paths_and_failures(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    path = write_action(tmp_path, [
        {"id": "one", "shell": "bash", "env": {"WHO": "${{ inputs.who }}"},
         "run": 'echo "greeting=hello $WHO" >> "$GITHUB_OUTPUT"\n'
                'printf "long<<END\\na\\nb\\nEND\\n" >> "$GITHUB_OUTPUT"\n'
                f'echo "{tools}" >> "$GITHUB_PATH"\n'
                f'printf "#!/bin/sh\\necho tool ran\\n" > "{tools}/mytool"; chmod +x "{tools}/mytool"'},
        {"name": "second", "if": "steps.one.outputs.greeting == 'HELLO WORLD'", "shell": "bash",
         "run": "mytool; echo \"summary line\" >> \"$GITHUB_STEP_SUMMARY\""},
        {"name": "skipped", "if": "inputs.who == 'nobody'", "shell": "bash", "run": "echo should not run"},
        {"name": "upload", "uses": "some/action@v1", "with": {"file": "${{ steps.one.outputs.greeting }}"}},
        {"name": "tolerated", "continue-on-error": True, "shell": "bash", "run": "exit 3"},
        {"name": "fails", "shell": "bash", "run": "exit 4"},
        {"name": "after a failure", "shell": "bash", "run": "echo should not run either"},
        {"name": "always", "if": "always()", "shell": "bash", "run": "echo cleanup ran"},
    ], inputs={"who": {"default": "world"}},
        outputs={"greeting": {"value": "${{ steps.one.outputs.greeting }}"},
                 "long": {"value": "${{ steps.one.outputs.long }}"}})
    done = run_steps(tmp_path, path, "--outputs", str(tmp_path / "out"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "tool ran" in done.stdout
    assert "should not run" not in done.stdout
    assert "skipped locally: would run some/action@v1 with {'file': 'hello world'}" in done.stdout
    assert "step 5 failed with exit status 3" in done.stdout and "cleanup ran" in done.stdout
    assert "  greeting: hello world\n  long: a\nb\n" in done.stdout
    summary = Path(next(line for line in done.stdout.splitlines() if line.startswith("job summary: ")).split(": ", 1)[1])
    assert summary.read_text() == "summary line\n"


def test_the_step_runner_refuses_what_it_cannot_run(tmp_path):
    path = write_action(tmp_path, [{"shell": "bash", "run": "true"}])
    done = run_steps(tmp_path, path, "--input", "nope=1")
    assert done.returncode == 2 and "no input named nope" in done.stderr
    bad = write_action(tmp_path, [{"shell": "bash", "if": "contains(inputs.x, 'y')", "run": "true"}])
    done = run_steps(tmp_path, bad)
    assert done.returncode == 2 and "contains() is not supported here" in done.stderr
