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
