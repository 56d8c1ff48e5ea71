"""The command-line habits ruff users have: --show-settings, --show-files, --statistics,
`verify-perf clean`, and rule prefixes in `verify-perf rule`."""

from __future__ import annotations

import json
import os
from dataclasses import fields

import pytest

from tests.snippets import SYNC
from verifier.cli import main
from verifier.config import Settings

SYNCS = SYNC + "    print(loss.item())\n    print(loss.item())\n    print(loss.mean().item())\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.verify-perf]\nselect = ["VP2"]\nexclude = ["legacy/*"]\nper-file-ignores = { "bench/*" = ["VP203"] }\n'
        'severity = { VP201 = "HIGH" }\nmin-score = 80\n'
    )
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SYNCS)
    (tmp_path / "src" / "notes.py").write_text("x = 1\n")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(SYNCS)
    return tmp_path


def test_show_settings_prints_every_effective_setting_and_runs_nothing(project, capsys):
    assert main([".", "--show-settings", "--extend-select", "VP501", "--exclude", "tmp"]) == 0
    out = capsys.readouterr().out
    settings = dict(line.split(" = ", 1) for line in out.splitlines())
    assert settings["config-file"] == str(project / "pyproject.toml")
    assert settings["project-root"] == str(project)
    assert settings["select"] == "VP2, VP501"
    assert settings["rules"] == "VP201, VP202, VP203, VP204, VP205, VP206, VP501, VP900, VP901, VP902"
    assert settings["exclude"] == f"{project}/legacy/*, tmp"
    assert settings["per-file-ignores"] == f"{project}/bench/* = VP203"
    assert settings["severity"] == "VP201 = HIGH"
    assert settings["min-score"] == "80"
    assert not (project / "reports").exists()
    shown = {key.split(".")[-1].replace("-", "_") for key in settings}
    renamed = {"config_path": "config_file", "thresholds": "speedup", "regression_tolerance": "regression_tolerance"}
    missing = [f.name for f in fields(Settings) if renamed.get(f.name, f.name) not in shown]
    assert missing == [], "--show-settings must show every setting"


def test_show_files_lists_what_would_be_reported(project, capsys):
    assert main([".", "--show-files"]) == 0
    assert capsys.readouterr().out.splitlines() == [os.path.join("src", "notes.py"), os.path.join("src", "train.py")]
    assert main(["legacy/old.py", "src/train.py", "--show-files", "--force-exclude"]) == 0
    assert capsys.readouterr().out.splitlines() == [os.path.join("src", "train.py")]


def test_statistics_counts_findings_per_rule_and_heat(project, capsys):
    assert main(["src", "--statistics", "--no-report"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        "2\tVP201\tsync-in-hot-loop\tstep\t2 HIGH",
        "1\tVP202\trepeated-item\tstep\t1 LOW",
        "1\tVP203\tsynchronize-in-loop\tstep\t1 LOW",  # LOW: the read on the next line waits anyway
    ]
    assert lines[-1].startswith("Decision: BLOCK")
    assert main(["src", "--statistics", "--format", "json", "--no-report"]) == 1
    assert json.loads(capsys.readouterr().out) == [
        {"code": "VP201", "name": "sync-in-hot-loop", "count": 2, "severities": {"HIGH": 2},
         "heats": {"step": {"count": 2, "severities": {"HIGH": 2}}}},
        {"code": "VP202", "name": "repeated-item", "count": 1, "severities": {"LOW": 1},
         "heats": {"step": {"count": 1, "severities": {"LOW": 1}}}},
        {"code": "VP203", "name": "synchronize-in-loop", "count": 1, "severities": {"LOW": 1},
         "heats": {"step": {"count": 1, "severities": {"LOW": 1}}}},
    ]


TRAIN_AND_EVAL = (
    "import torch\n\n"
    "for epoch in range(10):\n"
    "    for batch in loader:\n"
    "        loss = model(batch.cuda())\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "        print(loss.item())\n"
    "    with torch.no_grad():\n"
    "        for batch in val_loader:\n"
    "            print(model(batch.cuda()).item())\n"
)


def test_statistics_split_a_rule_by_heat_hottest_first(project, capsys):
    (project / "src" / "train.py").write_text(TRAIN_AND_EVAL)
    assert main(["src", "--statistics", "--no-report", "--isolated", "--select", "VP1,VP2"]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == [
        "1\tVP102\tblocking-host-to-device-copy\tstep\t1 LOW",
        "1\tVP102\tblocking-host-to-device-copy\teval\t1 LOW",
        "1\tVP201\tsync-in-hot-loop\tstep\t1 MEDIUM",
        "1\tVP201\tsync-in-hot-loop\teval\t1 LOW",  # an evaluation batch: at most LOW
    ]
    assert main(["src", "--statistics", "--format", "json", "--no-report", "--isolated", "--select", "VP201"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"code": "VP201", "name": "sync-in-hot-loop", "count": 2, "severities": {"MEDIUM": 1, "LOW": 1},
         "heats": {"step": {"count": 1, "severities": {"MEDIUM": 1}}, "eval": {"count": 1, "severities": {"LOW": 1}}}},
    ]


def test_statistics_written_to_a_file_can_be_written_again(project, capsys):
    assert main(["src", "--statistics", "--no-report", "-o", "stats.txt"]) == 1
    assert main(["src", "--statistics", "--no-report", "-o", "stats.txt"]) == 1
    assert (project / "stats.txt").read_text().startswith("2\tVP201\tsync-in-hot-loop\tstep\t2 HIGH\n")


def test_statistics_with_another_format_is_a_usage_error(project, capsys):
    assert main(["src", "--statistics", "--format", "sarif", "--no-report"]) == 2
    assert capsys.readouterr().err == "verify-perf: error: --statistics prints text or json, not --format sarif\n"


def test_clean_removes_the_caches_it_made_and_nothing_else(project, capsys):
    (project / "sub").mkdir()
    (project / "sub" / "a.py").write_text(SYNCS)
    assert main(["src", "--no-report", "-q"]) == 1
    assert main(["sub", "--no-report", "-q", "--cache-dir", "sub/.verify_perf_cache"]) == 1
    assert (project / ".verify_perf_cache").is_dir() and (project / "sub" / ".verify_perf_cache").is_dir()
    (project / "keep").mkdir()
    (project / "keep" / "precious.txt").write_text("mine")
    capsys.readouterr()
    assert main(["clean", "--cache-dir", "keep"]) == 2
    assert "not removing keep: it is not a verify-perf cache" in capsys.readouterr().err
    assert (project / "keep" / "precious.txt").exists()
    assert main(["clean"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "Removing cache at: .verify_perf_cache",
        f"Removing cache at: {os.path.join('sub', '.verify_perf_cache')}",
    ]
    assert not (project / ".verify_perf_cache").exists() and not (project / "sub" / ".verify_perf_cache").exists()
    assert main(["clean"]) == 0  # nothing left: nothing to do


def test_clean_never_follows_a_symlinked_cache(project, tmp_path_factory, capsys):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "CACHEDIR.TAG").write_text("Signature: x\n# created by verify-perf.\n")
    os.symlink(elsewhere, project / ".verify_perf_cache")
    assert main(["clean"]) == 2
    assert (elsewhere / "CACHEDIR.TAG").exists()


def test_rule_accepts_a_prefix(capsys):
    assert main(["rule", "VP2"]) == 0
    text = capsys.readouterr().out
    assert [line for line in text.splitlines() if line.startswith("# ")] == [
        "# sync-in-hot-loop (VP201)", "# repeated-item (VP202)", "# synchronize-in-loop (VP203)",
        "# subprocess-in-loop (VP204)", "# data-dependent-shape-sync (VP205)",
        "# device-value-into-host-container (VP206)", "# host-read-in-compiled-region (VP207)",
    ]
    assert main(["rule", "VP2", "--format", "json"]) == 0
    assert [r["code"] for r in json.loads(capsys.readouterr().out)] == [
        "VP201", "VP202", "VP203", "VP204", "VP205", "VP206", "VP207",
    ]
    assert main(["rule", "repeated-item", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["code"] == "VP202"
    assert main(["rule", "VP7"]) == 2
    assert "unknown rule code, prefix or name 'VP7'" in capsys.readouterr().err
