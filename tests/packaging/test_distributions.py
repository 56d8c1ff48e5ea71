"""verify-perf as users get it: the sdist and wheel built with `python -m build`, checked with
`twine check`, installed into fresh virtual environments (base, `[dynamic]` and `[server]`), and the
pre-commit hook run from a local clone. Slow (minutes: it installs torch into a new venv), so
not part of the default suite: `pytest -m slow tests/packaging -s` prints the sizes and times.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent.parent
CONSTRAINTS = ROOT / "constraints.txt"


def run(*command, cwd=None, env=None, check=True) -> subprocess.CompletedProcess:
    completed = subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if check and completed.returncode != 0:
        raise AssertionError(f"{command} failed ({completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    return completed


def mebibytes(folder: Path) -> float:
    total = sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 2**20


def fresh_venv(folder: Path, requirement: str) -> tuple[Path, float]:
    """A new venv with `requirement` installed the way users do (plus this project's torch pin)."""
    run(sys.executable, "-m", "venv", folder)
    started = time.perf_counter()
    run(folder / "bin" / "pip", "install", "-q", "-c", CONSTRAINTS, requirement)
    return folder / "bin", time.perf_counter() - started


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out, ROOT)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def test_twine_check_passes(dists):
    completed = run(sys.executable, "-m", "twine", "check", "--strict", dists["wheel"], dists["sdist"])
    assert completed.stdout.count("PASSED") == 2


def test_the_wheel_maps_rules_and_reference_impl_under_verifier(dists):
    names = zipfile.ZipFile(dists["wheel"]).namelist()
    assert "verifier/rules/vp201_sync_in_hot_loop.py" in names
    assert "verifier/reference_impl/train.py" in names
    assert "verifier/report/templates/report.md.j2" in names
    assert "verifier/report/schemas/findings.schema.json" in names
    tops = {name.split("/")[0] for name in names}
    assert tops == {"verifier", next(t for t in tops if t.endswith(".dist-info"))}
    metadata = zipfile.ZipFile(dists["wheel"]).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))
    ).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    base = [line for line in requires if "extra ==" not in line]
    assert sorted(line.split()[1].split(">")[0] for line in base) == ["jinja2", "libcst", "rich"]
    assert any(line.startswith("Requires-Dist: torch") and 'extra == "dynamic"' in line for line in requires)


def test_the_sdist_builds_the_same_wheel_contents(dists, tmp_path):
    with tarfile.open(dists["sdist"]) as archive:
        members = archive.getnames()
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / dists["sdist"].name.removesuffix(".tar.gz")
    assert any(m.endswith("/rules/vp201_sync_in_hot_loop.py") for m in members)
    run(sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "again", root)
    (rebuilt,) = (tmp_path / "again").glob("*.whl")
    assert sorted(zipfile.ZipFile(rebuilt).namelist()) == sorted(zipfile.ZipFile(dists["wheel"]).namelist())


def test_the_base_wheel_pulls_no_torch_and_runs_the_gate(dists, tmp_path):
    bin_dir, seconds = fresh_venv(tmp_path / "base", str(dists["wheel"]))
    installed = run(bin_dir / "pip", "list", "--format=freeze").stdout.lower()
    assert "torch" not in installed and "nvidia" not in installed
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    gate = run(bin_dir / "verify-perf", "examples/", "--no-report", cwd=tmp_path, check=False)
    assert gate.returncode == 1, gate.stderr
    assert "examples/bad_train.py:71:9: VP301 [CRITICAL]" in gate.stdout
    assert gate.stdout.splitlines()[-1].startswith("Decision: BLOCK")
    bench = run(bin_dir / "verify-perf", "bench", "--preset", "tiny", cwd=tmp_path, check=False)
    assert bench.returncode == 2
    message, python, command = bench.stderr.strip().partition(f"install it with: {bin_dir}/python")
    assert message == (
        "verify-perf: error: `verify-perf bench` needs the `dynamic` extra (torch, nvidia-ml-py, numpy, "
        "matplotlib not installed); "
    )
    assert command.endswith(f" -m pip install '{dists['wheel']}[dynamic]'")
    # The command it names works: it is what the next test does.
    print(f"\nbase venv: {mebibytes(tmp_path / 'base'):.0f} MiB, pip install {seconds:.1f} s")


def test_the_dynamic_wheel_runs_the_harness(dists, tmp_path):
    bin_dir, seconds = fresh_venv(tmp_path / "dynamic", f"{dists['wheel']}[dynamic]")
    bench = run(bin_dir / "verify-perf", "bench", "--preset", "tiny", "--steps", "3", "--repeats", "1", "--max-repeats", "1",
                cwd=tmp_path, check=False)
    assert bench.returncode == 0, bench.stderr
    assert "Failed to initialize NumPy" not in bench.stderr
    assert "AMP speedup over FP32" in bench.stdout
    print(f"\ndynamic venv: {mebibytes(tmp_path / 'dynamic'):.0f} MiB, pip install {seconds:.1f} s")


def test_the_server_wheel_answers_an_editor(dists, tmp_path):
    """`verify-perf[server]` installs the language server; it answers `initialize` over stdio and
    exits on `exit`, writing nothing but protocol messages to standard output."""
    bin_dir, seconds = fresh_venv(tmp_path / "server", f"{dists['wheel']}[server]")
    installed = run(bin_dir / "pip", "list", "--format=freeze").stdout.lower()
    assert "pygls" in installed and "torch" not in installed
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None},
        {"jsonrpc": "2.0", "method": "exit", "params": None},
    ]
    framed = b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body) for body in (json.dumps(m).encode() for m in messages)
    )
    served = subprocess.run([bin_dir / "verify-perf", "server"], input=framed, capture_output=True, timeout=120, cwd=tmp_path)
    assert served.returncode == 0, served.stderr
    header, _, body = served.stdout.partition(b"\r\n\r\n")
    fields = dict(line.split(b": ", 1) for line in header.split(b"\r\n"))
    first = json.loads(body[: int(fields[b"Content-Length"])])
    assert first["id"] == 1 and first["result"]["serverInfo"]["name"] == "verify-perf"
    assert first["result"]["capabilities"]["codeActionProvider"]["codeActionKinds"] == ["quickfix"]
    print(f"\nserver venv: {mebibytes(tmp_path / 'server'):.0f} MiB, pip install {seconds:.1f} s")


HOOK_CALLER = (
    "import torch\nfrom helper import log_step\n\n\ndef train(model, loader, optimizer):\n"
    "    for x, y in loader:\n        loss = model(x, y)\n        loss.backward()\n"
    "        optimizer.step()\n        log_step(loss)\n"
)
HOOK_HELPER_SYNC = "import torch\n\n\ndef log_step(loss):\n    torch.cuda.synchronize()\n    return loss\n"
HOOK_HELPER_EMPTY_CACHE = "import torch\n\n\ndef log_step(loss):\n    torch.cuda.empty_cache()\n    return loss\n"


def git(folder: Path, *args: str) -> str:
    return run("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false",
               *args, cwd=folder).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_runs_the_hook_from_a_local_clone(tmp_path):
    """The committed HEAD of this repository, cloned, is the hook repo (as users reference a tag)."""
    clone = tmp_path / "verify-perf"
    run("git", "clone", "-q", ROOT, clone)
    revision = git(clone, "rev-parse", "HEAD").strip()
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    (project / "train.py").write_text(HOOK_CALLER)
    (project / "helper.py").write_text("def log_step(loss):\n    return loss\n")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {clone}\n  rev: {revision}\n  hooks:\n  - id: verify-perf\n"
    )
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "base")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_CONSTRAINT": str(CONSTRAINTS)}
    pre_commit = [sys.executable, "-m", "pre_commit"]

    started = time.perf_counter()
    first = run(*pre_commit, "run", "--all-files", cwd=project, env=env, check=False)
    first_seconds = time.perf_counter() - started
    assert first.returncode == 0, first.stdout + first.stderr
    assert "verify-perf" in first.stdout and "Passed" in first.stdout

    # The hook is verbose: a passing commit still shows the findings that do not block.
    (project / "helper.py").write_text(HOOK_HELPER_EMPTY_CACHE)
    git(project, "add", "helper.py")
    passing = run(*pre_commit, "run", cwd=project, env=env, check=False)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout
    assert "helper.py:5:5: VP403 [MEDIUM]" in passing.stdout
    assert "Decision: PASS" in passing.stdout

    (project / "helper.py").write_text(HOOK_HELPER_SYNC)
    git(project, "add", "helper.py")
    staged = run(*pre_commit, "run", cwd=project, env=env, check=False)
    assert staged.returncode == 1
    assert "Failed" in staged.stdout
    assert "helper.py:5:5: VP203 [HIGH]" in staged.stdout
    assert not (project / "reports").exists()
    environments = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    print(
        f"\npre-commit environment: {sum(mebibytes(p) for p in environments):.0f} MiB, "
        f"first run {first_seconds:.1f} s"
    )
