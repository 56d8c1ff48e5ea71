"""The gate fails closed: a file it could not analyse blocks unless the team says otherwise,
special files are never read, and user mistakes are usage errors with a message."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from verifier.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_json(capsys, *argv) -> tuple[int, dict]:
    code = main([*argv, "--format", "json", "--no-report", "--no-cache"])
    return code, json.loads(capsys.readouterr().out)


def vp900(report) -> list[tuple[str, int, str]]:
    return [(Path(f["path"]).name, f["line"], f["severity"]) for f in report["findings"] if f["code"] == "VP900"]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    return tmp_path / "src"


def test_one_valid_line_no_longer_silences_bad_train(folder, capsys):
    text = (EXAMPLES / "bad_train.py").read_text() + "\nOK = " + " and ".join(["True"] * 500) + "\n"
    (folder / "bad_train.py").write_text(text)
    code, report = run_json(capsys, "src/bad_train.py", "--isolated")
    assert code == 1
    assert vp900(report) == []
    assert ("VP301", "CRITICAL") in [(f["code"], f["severity"]) for f in report["findings"]]


def test_an_unanalysable_file_blocks_by_default_and_warns_when_configured(folder, capsys):
    (folder / "crash.py").write_text("import torch\nOK = " + " and ".join(["True"] * 10_000) + "\n")
    code, report = run_json(capsys, "src", "--isolated")
    assert (code, vp900(report)) == (1, [("crash.py", 1, "HIGH")])
    config = folder.parent / "pyproject.toml"
    config.write_text('[tool.verify-perf]\nunanalysable = "warn"\n')
    code, report = run_json(capsys, "src", "--config", str(config))
    assert (code, vp900(report)) == (0, [("crash.py", 1, "INFO")])


def test_a_syntax_error_stays_info(folder, capsys):
    (folder / "broken.py").write_text("import torch\ndef train(:\n    pass\n")
    code, report = run_json(capsys, "src", "--isolated")
    assert (code, vp900(report)) == (0, [("broken.py", 2, "INFO")])


def test_brackets_deeper_than_python_accepts_are_a_syntax_error_at_their_line(folder, capsys):
    (folder / "unclosed.py").write_text("import torch\nx = " + "(" * 1500 + "\n")
    (folder / "closed.py").write_text("import torch\n\nx = " + "(" * 201 + "1" + ")" * 201 + "\n")
    code, report = run_json(capsys, "src", "--isolated")
    assert code == 0
    assert [(Path(f["path"]).name, f["line"], f["severity"], f["message"]) for f in report["findings"]] == [
        ("closed.py", 3, "INFO", "syntax error: too many nested parentheses"),
        ("unclosed.py", 2, "INFO", "syntax error: too many nested parentheses"),
    ]


@pytest.mark.parametrize("hostile", [
    'BANNER = "' + "(" * 201 + ")" * 201 + '"',
    "# " + "[" * 5000,
    'DOC = """' + "{" * 300 + '"""',
])
def test_brackets_in_strings_and_comments_never_hide_findings(folder, capsys, hostile):
    shutil.copy(EXAMPLES / "bad_train.py", folder / "bad_train.py")
    _, alone = run_json(capsys, "src", "--isolated")
    with open(folder / "bad_train.py", "a") as handle:
        handle.write(hostile + "\n")
    code, report = run_json(capsys, "src", "--isolated")
    assert code == 1
    assert report["findings"] == alone["findings"] and len(alone["findings"]) == 15


def test_a_severity_configured_for_vp900_decides_for_every_reason(folder, capsys):
    (folder / "broken.py").write_text("import torch\ndef train(:\n    pass\n")
    (folder / "crash.py").write_text("import torch\nOK = " + " and ".join(["True"] * 10_000) + "\n")
    config = folder.parent / "pyproject.toml"
    config.write_text('[tool.verify-perf]\nseverity = { VP900 = "HIGH" }\n')
    code, report = run_json(capsys, "src")
    assert (code, vp900(report)) == (1, [("broken.py", 2, "HIGH"), ("crash.py", 1, "HIGH")])
    config.write_text('[tool.verify-perf]\nseverity = { unanalysable-file = "LOW" }\n')
    code, report = run_json(capsys, "src")
    assert (code, vp900(report)) == (0, [("broken.py", 2, "LOW"), ("crash.py", 1, "LOW")])


def test_valid_code_that_libcst_cannot_parse_blocks(folder, monkeypatch):
    """What a Python release newer than libcst's grammar looks like: this Python parses it, libcst
    does not. Analysed in this process, where the stand-in parser is in place."""
    import libcst

    from verifier.config import Settings
    from verifier.rules import all_rules
    from verifier.static.engine import analyze_file

    def parse_module(source, *args, **kwargs):
        raise libcst.ParserSyntaxError("unsupported syntax", lines=source.splitlines(), raw_line=2, raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", parse_module)
    (folder / "new_syntax.py").write_text("import torch\nvalue = torch.zeros(3).item()\n")
    (folder / "broken.py").write_text("import torch\ndef train(:\n    pass\n")
    rules = list(all_rules())
    found = [
        (f.line, f.severity.name, f.message)
        for name in ("new_syntax.py", "broken.py")
        for f in analyze_file(str(folder / name), rules, Settings()).findings
    ]
    assert found == [
        (2, "HIGH", "libcst cannot parse this file: unsupported syntax"),
        (2, "INFO", "syntax error: invalid syntax"),  # Python rejects it too: not valid code
    ]


def test_special_files_are_never_read(folder, capsys):
    os.mkfifo(folder / "pipe")
    (folder / "pipe.py").symlink_to(folder / "pipe")
    (folder / "zero.py").symlink_to("/dev/zero")
    shutil.copy(EXAMPLES / "good_train.py", folder / "good_train.py")
    code, report = run_json(capsys, "src", "--isolated")
    assert code == 0
    messages = {Path(f["path"]).name: f["message"] for f in report["findings"] if f["code"] == "VP900"}
    assert messages == {
        "pipe.py": "not read: it is a FIFO, not a regular file",
        "zero.py": "not read: it is a character device, not a regular file",
    }
    assert vp900(report) == [("pipe.py", 1, "INFO"), ("zero.py", 1, "INFO")]


def test_special_files_named_like_python_are_reported_when_named_directly_too(folder, capsys):
    # Named on the command line (as pre-commit names files) they were exit 2 "not a regular file".
    os.mkfifo(folder / "pipe")
    (folder / "pipe.py").symlink_to(folder / "pipe")
    os.mkfifo(folder / "fifo.py")
    (folder / "zero.py").symlink_to("/dev/zero")
    shutil.copy(EXAMPLES / "bad_train.py", folder / "bad_train.py")
    code, report = run_json(capsys, "src/pipe.py", "src/fifo.py", "src/zero.py", "src/bad_train.py", "--isolated")
    assert code == 1
    assert vp900(report) == [("fifo.py", 1, "INFO"), ("pipe.py", 1, "INFO"), ("zero.py", 1, "INFO")]
    for named, message in (("src/pipe", "src/pipe: not a regular file or directory"),
                           ("/dev/zero", "/dev/zero: not a regular file or directory")):
        assert main([named, "--no-report", "--no-cache"]) == 2
        assert capsys.readouterr().err == f"verify-perf: error: {message}\n"


def test_a_file_over_the_size_limit_is_a_blocking_vp900(folder, capsys):
    shutil.copy(EXAMPLES / "good_train.py", folder / "good_train.py")
    code, report = run_json(capsys, "src", "--isolated", "--max-file-size", "1KiB")
    assert code == 1
    assert vp900(report) == [("good_train.py", 1, "HIGH")]
    assert "over the limit of 1 KiB (max-file-size)" in report["findings"][0]["message"]
    config = folder.parent / "pyproject.toml"
    config.write_text('[tool.verify-perf]\nmax-file-size = "1MiB"\n')
    code, report = run_json(capsys, "src", "--config", str(config))
    assert (code, vp900(report)) == (0, [])


def test_a_path_named_twice_is_analysed_once(folder, capsys):
    shutil.copy(EXAMPLES / "bad_train.py", folder / "bad_train.py")
    _, once = run_json(capsys, "src", "--isolated")
    _, twice = run_json(capsys, "src", "./src/", str(folder), "src/bad_train.py", "--isolated")
    assert twice["findings"] == once["findings"]


def test_an_unreadable_folder_blocks(folder, capsys, monkeypatch):
    (folder / "secret").mkdir()
    (folder / "secret" / "train.py").write_text("import torch\n")
    shutil.copy(EXAMPLES / "good_train.py", folder / "good_train.py")
    real_scandir = os.scandir

    def scandir(path="."):  # what a folder without read permission gives a non-root user
        if os.path.basename(os.fspath(path)) == "secret":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, report = run_json(capsys, "src", "--isolated")
    assert code == 1
    assert [(f["path"], f["severity"], f["message"]) for f in report["findings"] if f["code"] == "VP900"] == [
        ("src/secret", "HIGH", "cannot read folder: Permission denied")
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--file-timeout", "1e-300"], "--file-timeout: expected a number of seconds from 0.1 to 86400, got '1e-300'"),
        (["--file-timeout", "inf"], "--file-timeout: expected a number of seconds from 0.1 to 86400, got 'inf'"),
        (["--file-timeout", "nan"], "--file-timeout: expected a number of seconds from 0.1 to 86400, got 'nan'"),
        (["--jobs", "100000"], "--jobs: expected an integer from 1 to 256, got '100000'"),
        (["--run-timeout", "0"], "--run-timeout: expected a number of seconds from 0.1 to 86400, got '0'"),
        (["--max-file-size", "0"], "--max-file-size: expected a size from 1 byte to 1024 GiB, got '0'"),
        (["--max-file-size", "ten"], "--max-file-size: expected a size such as 10MiB or a number of bytes, got 'ten'"),
    ],
)
def test_option_ranges(folder, capsys, argv, message):
    assert main(["src", "--no-report", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('per-file-ignores = {"*" = [""]}', "per-file-ignores.'*': empty rule code"),
        ('ignore = ["  "]', "ignore: empty rule code"),
        ("x = " + "[" * 5000 + "]" * 5000, "invalid TOML: values nested too deeply"),
        ('unanalysable = "ignore"', "unanalysable: expected one of 'block', 'warn', got str 'ignore'"),
        ("max-file-size = 0", "max-file-size: expected a size from 1 byte to 1024 GiB, got int 0"),
    ],
)
def test_config_mistakes_are_usage_errors(folder, capsys, config, message):
    (folder.parent / "pyproject.toml").write_text(f"[tool.verify-perf]\n{config}\n")
    assert main(["src", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[", "not JSON"),
        (b"[" * 100_000, "values nested too deeply"),
        (b'{"findings": [1]}', "a finding is int, not an object"),
        (b'{"findings": [{"path": 1, "line": 2, "code": "VP201"}]}', "finding fields of the wrong type: path"),
        (b'{"findings": [{"path": "a.py", "line": "2", "code": "VP201"}]}', "finding fields of the wrong type"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_a_malformed_baseline_is_a_usage_error(folder, capsys, content, message):
    (folder.parent / "base.json").write_bytes(content)
    assert main(["src", "--no-report", "--isolated", "--baseline", "base.json"]) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err and len(err.strip().splitlines()) == 1


def test_a_baseline_that_is_a_fifo_is_refused_without_blocking(folder, capsys):
    os.mkfifo(folder.parent / "base.json")
    assert main(["src", "--no-report", "--isolated", "--baseline", "base.json"]) == 2
    assert "not read: it is a FIFO" in capsys.readouterr().err


def test_no_python_files_is_said_clearly_and_never_scored(folder, capsys):
    (folder / "notes.txt").write_text("nothing to see\n")
    assert main(["src", "--isolated", "--no-cache", "--report-dir", "reports"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "Score: not scored (nothing was analysed: no Python files found).",
        "Nothing analysed: no Python files found under the given path(s).",
        "Decision: PASS",
    ]
    assert err.splitlines() == [
        "verify-perf: warning: no Python files found under the given path(s): nothing was analysed",
        "Report: reports/src.md (PASS, not scored)",
    ]
    report = (folder.parent / "reports" / "src.md").read_text()
    assert "**Score: not scored** (nothing was analysed: no Python files found)" in report
    assert "100/100" not in report
    code, document = run_json(capsys, "src", "--isolated")
    assert (code, document["score"]["total"], document["score"]["not_scored"]) == (
        0, None, "nothing was analysed: no Python files found"
    )


def test_when_no_file_could_be_analysed_there_is_no_score(folder, capsys):
    (folder / "broken.py").write_text("import torch\ndef train(:\n    pass\n")
    code, document = run_json(capsys, "src", "--isolated")
    assert code == 0
    assert document["score"]["total"] is None
    assert document["score"]["not_scored"] == "nothing was analysed: the one file could not be analysed"


def test_the_summary_counts_the_files_that_could_not_be_analysed(folder, capsys):
    (folder / "broken.py").write_text("def train(:\n    pass\n")
    (folder / "plain.py").write_text("import torch\n")
    code = main(["src", "--isolated", "--no-report", "--no-cache"])
    summary = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Found ")]
    assert (code, summary) == (0, ["Found 1 finding (1 INFO) in 1 of 2 files, 1 of them analysed (1 file could not be)."])


def test_a_project_file_the_runs_time_limit_cut_off_is_reported_and_blocks(folder, capsys):
    """It lends no heat to the named file, whose findings may then be missing: never a silent PASS."""
    (folder.parent / "pyproject.toml").write_text("[tool.verify-perf]\n")
    (folder / "train.py").write_text("import torch\n\nx = torch.zeros(3)\n")
    (folder.parent / "lib").mkdir()
    (folder.parent / "lib" / "slow.py").write_text("import torch\ny = x" + ".a" * 20_000 + "\n")
    code, report = run_json(capsys, "src/train.py", "--run-timeout", "3", "--no-prefilter")
    assert (code, vp900(report)) == (1, [("slow.py", 1, "HIGH")])
    assert [f["message"] for f in report["findings"]] == [
        "not analysed: the run reached its time limit of 3 s first (--run-timeout)"
    ]
