"""The base install is the static gate; `--dynamic` and `bench` without the `dynamic` extra stop
with exit 2 and the exact command that installs it from wherever this copy came from."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verifier import extras
from verifier.cli import main


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (None, "'verify-perf[dynamic]'"),
        ("not json", "'verify-perf[dynamic]'"),
        (
            {"url": "https://github.com/acme/verify-perf", "vcs_info": {"vcs": "git", "requested_revision": "v0.1.0", "commit_id": "abc"}},
            "'verify-perf[dynamic] @ git+https://github.com/acme/verify-perf@v0.1.0'",
        ),
        (
            {"url": "https://github.com/acme/verify-perf", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
            "'verify-perf[dynamic] @ git+https://github.com/acme/verify-perf@abc123'",
        ),
        (
            {"url": "file:///tmp/dist/verify_perf-0.1.0-py3-none-any.whl", "archive_info": {}},
            "'/tmp/dist/verify_perf-0.1.0-py3-none-any.whl[dynamic]'",
        ),
        ({"url": "file:///home/me/my%20clone", "dir_info": {"editable": True}}, "-e '/home/me/my clone[dynamic]'"),
        ({"url": "file:///home/me/clone", "dir_info": {}}, "'/home/me/clone[dynamic]'"),
        (
            {"url": "https://example.org/verify_perf-0.1.0.tar.gz", "archive_info": {}},
            "'verify-perf[dynamic] @ https://example.org/verify_perf-0.1.0.tar.gz'",
        ),
    ],
    ids=["index", "unreadable", "git-tag", "git-commit", "wheel", "editable", "folder", "archive-url"],
)
def test_the_install_command_follows_the_source_of_this_copy(record, expected):
    text = record if record is None or isinstance(record, str) else json.dumps(record)
    assert extras.requirement_for(text, "dynamic") == expected


@pytest.fixture
def without_dynamic(monkeypatch):
    monkeypatch.setattr(extras, "missing_for", lambda extra="dynamic": ["torch", "nvidia-ml-py"])
    monkeypatch.setattr(extras, "_requirement", lambda extra: "'verify-perf[dynamic]'")


@pytest.mark.parametrize(
    ("argv", "feature"),
    [(["bench", "--preset", "tiny"], "`verify-perf bench`"), (["train.py", "--dynamic"], "--dynamic")],
)
def test_dynamic_features_without_the_extra_exit_2_with_the_command(without_dynamic, capsys, tmp_path, monkeypatch, argv, feature):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"verify-perf: error: {feature} needs the `dynamic` extra (torch, nvidia-ml-py not installed); "
        f"install it with: {extras.install_command()}\n"
    )
    assert extras.install_command() == f"{sys.executable} -m pip install 'verify-perf[dynamic]'"
    assert not (tmp_path / "reports").exists()


def test_the_static_gate_runs_without_the_extra(without_dynamic, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(
        "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"
        '    with torch.autocast("cuda", dtype=torch.bfloat16):\n        loss = model(batch)\n'
        "    loss.backward()\n    optimizer.step()\n"
    )
    assert main(["train.py", "--no-report", "-q"]) == 1
    assert capsys.readouterr().out.startswith("train.py:4:5: VP203 [HIGH]")


def test_this_install_has_the_dynamic_extra():
    """The test command installs the extra (the harness tests need it)."""
    assert extras.missing_for("dynamic") == []


def test_no_numpy_warning_from_the_harness():
    """numpy is part of the extra, so torch no longer warns "Failed to initialize NumPy"."""
    completed = subprocess.run(
        [sys.executable, "-m", "verifier", "bench", "--help"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0
    assert "usage: verify-perf bench" in completed.stdout
    assert completed.stderr == ""


def test_the_language_server_without_its_extra_exits_2_with_the_command(monkeypatch, capsys):
    monkeypatch.setattr(extras, "missing_for", lambda extra="dynamic": ["pygls"] if extra == "server" else [])
    monkeypatch.setattr(extras, "_requirement", lambda extra: f"'verify-perf[{extra}]'")
    assert main(["server"]) == 2
    assert capsys.readouterr().err == (
        "verify-perf: error: `verify-perf server` needs the `server` extra (pygls not installed); "
        f"install it with: {sys.executable} -m pip install 'verify-perf[server]'\n"
    )


def test_this_install_has_the_server_extra():
    assert extras.missing_for("server") == []
