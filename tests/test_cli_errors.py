"""Bad input and internal failures: one clear line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import pytest

from verifier import cli


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing_folder/"], "missing_folder/: no such file or directory"),
        (["README.md"], "README.md: not a Python file"),
        (["examples/", "--jobs", "0"], "--jobs: expected an integer from 1 to 256"),
        (["examples/", "--file-timeout", "-1"], "--file-timeout: expected a number of seconds from 0.1 to 86400"),
        (["examples/", "--select", "VP999"], "unknown rule code or name 'VP999'"),
        (["examples/", "--task", "../x"], "--task '../x'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, monkeypatch, tmp_path, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# notes\n")
    (tmp_path / "examples").mkdir()
    assert cli.main([*argv, "--no-report"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_an_internal_error_is_one_line_and_exit_2(capsys, monkeypatch, tmp_path):
    import verifier.check

    def explode(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(verifier.check, "run_check", explode)
    monkeypatch.delenv("VERIFY_PERF_DEBUG", raising=False)
    assert cli.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("verify-perf: internal error: RuntimeError: boom")
    assert "Traceback" not in err


HUGE = "9" * 5000  # past Python's 4,300-digit limit for converting text to an integer
HUGE_SHOWN = f"{HUGE[:40]!r}... (5000 characters)"


@pytest.mark.parametrize(
    ("argv", "environment", "message"),
    [
        ([], {"VERIFY_PERF_JOBS": "²"}, "VERIFY_PERF_JOBS: expected an integer from 1 to 256, got '²'"),
        ([], {"VERIFY_PERF_JOBS": "٣"}, "VERIFY_PERF_JOBS: expected an integer from 1 to 256, got '٣'"),
        ([], {"VERIFY_PERF_JOBS": HUGE}, f"VERIFY_PERF_JOBS: expected an integer from 1 to 256, got {HUGE_SHOWN}"),
        ([], {"SOURCE_DATE_EPOCH": HUGE}, f"SOURCE_DATE_EPOCH={HUGE_SHOWN}: expected whole seconds since 1970"),
        (["--jobs", "²"], {}, "argument -j/--jobs: expected an integer from 1 to 256, got '²'"),
        (["--min-score", HUGE], {}, f"argument --min-score: expected an integer from 0 to 100, got {HUGE_SHOWN}"),
        (["--max-file-size", HUGE], {},
         f"argument --max-file-size: expected a size such as 10MiB or a number of bytes, got {HUGE_SHOWN}"),
    ],
    ids=["jobs-superscript", "jobs-arabic-indic", "jobs-huge", "epoch-huge", "option-jobs", "option-min-score",
         "option-max-file-size"],
)
def test_integers_from_options_and_the_environment_are_checked_before_conversion(
    capsys, monkeypatch, tmp_path, argv, environment, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["train.py", "--no-report", "--no-cache", *argv]) == 2
    assert capsys.readouterr().err == f"verify-perf: error: {message}\n"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (f"min-score = {HUGE}", "invalid TOML: an integer with too many digits to read"),
        (f"min-score = {'9' * 4000}",
         f"[tool.verify-perf] min-score: expected an integer from 0 to 100, got int {'9' * 40}... (4000 characters)"),
        (f"thresholds = {{ speedup = {'9' * 400} }}",
         f"[tool.verify-perf] thresholds.speedup: expected a number of at least 0, got int {'9' * 40}... (400 characters)"),
        (f'max-file-size = "{HUGE}"',
         f"[tool.verify-perf] max-file-size: expected a size such as 10MiB or a number of bytes, got str '{'9' * 39}... "
         "(5002 characters)"),
        ('max-file-size = "٣MiB"',
         "[tool.verify-perf] max-file-size: expected a size such as 10MiB or a number of bytes, got str '٣MiB'"),
    ],
    ids=["toml-past-the-digit-limit", "min-score-huge", "speedup-past-float", "size-huge", "size-arabic-indic"],
)
def test_integers_from_the_config_are_checked_before_conversion(capsys, monkeypatch, tmp_path, setting, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(f"[tool.verify-perf]\n{setting}\n")
    assert cli.main(["train.py", "--no-report", "--no-cache"]) == 2
    assert capsys.readouterr().err == f"verify-perf: error: {tmp_path / 'pyproject.toml'}: {message}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["train.py", "--config", ""], ["train.py", "--baseline", ""], ["train.py", "--diff", ""],
        ["train.py", "--report-dir", ""], ["train.py", "--cache-dir", ""], ["clean", "--cache-dir", ""],
    ],
    ids=["config", "baseline", "diff", "report-dir", "cache-dir", "clean"],
)
def test_an_empty_name_is_a_usage_error_not_an_option_left_out(capsys, monkeypatch, tmp_path, argv):
    # `--config "$CONFIG"` with the variable unset ran with the config found upwards; `--diff ""`
    # judged every line; `clean --cache-dir ""` removed the default caches.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / ".verify_perf_cache").mkdir()
    assert cli.main(argv) == 2
    option = argv[-2]
    assert capsys.readouterr().err == f"verify-perf: error: argument {option}: expected a name, got an empty string\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".verify_perf_cache", "train.py"]


@pytest.mark.parametrize("option", ["--file-timeout", "--run-timeout"])
@pytest.mark.parametrize("value", ["٣", "３", "1_0", "0x10", "5s"])
def test_seconds_are_ascii_decimals(capsys, monkeypatch, tmp_path, option, value):
    # float() takes `٣` and `1_0`: the limit was 3 or 10 seconds, not a usage error.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    assert cli.main(["train.py", "--no-report", "--no-cache", option, value]) == 2
    assert capsys.readouterr().err == (
        f"verify-perf: error: argument {option}: expected a number of seconds from 0.1 to 86400, got {value!r}\n"
    )


@pytest.mark.parametrize("value", ["0.5", ".5", "2", "1e1", " 3 "])
def test_seconds_in_plain_decimals_are_taken(monkeypatch, tmp_path, value):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("x = 1\n")
    assert cli.main(["train.py", "--no-report", "--no-cache", "--file-timeout", value, "--run-timeout", value]) == 0
