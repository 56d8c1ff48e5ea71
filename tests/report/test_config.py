"""`[tool.verify-perf]`: found upwards, validated, every error naming the file and the key."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import find_config, load_config
from verifier.findings import Heat, Severity
from verifier.errors import UsageError
from verifier.static.patterns import PathPattern


def write_pyproject(folder, body: str):
    path = folder / "pyproject.toml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_full_table_is_read(tmp_path):
    path = write_pyproject(tmp_path, """
        [tool.verify-perf]
        select = ["VP2", "VP301"]
        extend-select = ["VP4"]
        ignore = ["repeated-item"]
        exclude = ["legacy/*"]
        severity = { VP201 = "high", "synchronize-in-loop" = "LOW", VP203 = { step = "critical" }, VP403 = { eval = "LOW", step = "HIGH" } }
        per-file-ignores = { "tests/*" = ["VP201"] }
        block-on = ["CRITICAL"]
        min-score = 80
        block-on-new-only = true
        require-suppression-reason = true

        [tool.verify-perf.thresholds]
        speedup = 1.3
        memory-reduction = 0.25
        accuracy-drop = 0.02
        regression-tolerance = 0.1
    """)
    config = load_config(str(path), required=True)
    assert config.select == ("VP2", "VP301")
    assert config.ignore == ("repeated-item",)
    every = dict.fromkeys(Heat, Severity.HIGH)
    assert config.severity == {
        "VP201": every,
        # Later keys win, heat by heat.
        "VP203": {Heat.ONCE: Severity.LOW, Heat.EPOCH: Severity.LOW, Heat.EVAL: Severity.LOW, Heat.STEP: Severity.CRITICAL},
        "VP403": {Heat.EVAL: Severity.LOW, Heat.STEP: Severity.HIGH},
    }
    assert config.extend_select == ("VP4",)
    assert config.exclude == (PathPattern("legacy/*", str(tmp_path)),)
    assert config.per_file_ignores == ((PathPattern("tests/*", str(tmp_path)), ("VP201",)),)
    assert config.block_on == frozenset({Severity.CRITICAL})
    assert config.min_score == 80 and config.block_on_new_only is True
    assert config.require_suppression_reason is True
    assert (config.thresholds.min_speedup, config.thresholds.min_memory_reduction) == (1.3, 0.25)
    assert config.thresholds.max_accuracy_degradation == 0.02
    assert config.regression_tolerance == 0.1


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ('min_score = 80', "min_score", "unknown key (did you mean 'min-score'?)"),
        ('min-score = "80"', "min-score", "expected an integer from 0 to 100, got str '80'"),
        ('min-score = 101', "min-score", "expected an integer from 0 to 100"),
        ('select = "VP201"', "select", "expected a list of strings"),
        ('select = ["VP999"]', "select", "unknown rule code or name 'VP999'"),
        ('severity = { VP999 = "HIGH" }', "severity.VP999", "unknown rule code or name 'VP999'"),
        ('severity = { VP201 = "urgent" }', "severity.VP201", "unknown severity 'urgent'"),
        ('severity = { VP201 = { steps = "HIGH" } }', "severity.VP201.steps",
         "unknown heat (did you mean 'step'? heats: step, eval, epoch, once)"),
        ('severity = { VP201 = { step = "urgent" } }', "severity.VP201.step", "unknown severity 'urgent'"),
        ('severity = { VP201 = { step = 3 } }', "severity.VP201.step", "expected a severity name, got int 3"),
        ('severity = { VP201 = {} }', "severity.VP201", "empty table: name the heats it sets (step, eval, epoch, once)"),
        ('severity = { VP201 = 3 }', "severity.VP201", "expected a severity name or a table of heat = severity, got int 3"),
        ('per-file-ignores = { "a/*" = ["nope"] }', "per-file-ignores.'a/*'", "unknown rule code or name 'nope'"),
        ('block-on = ["SEVERE"]', "block-on", "unknown severity"),
        ('block-on-new-only = "yes"', "block-on-new-only", "expected true or false"),
        ('require-suppression-reason = 1', "require-suppression-reason", "expected true or false, got int 1"),
        ('require-reason = true', "require-reason", "unknown key (did you mean 'require-suppression-reason'?)"),
        ('thresholds = { speed = 2 }', "thresholds.speed", "unknown key (did you mean 'speedup'?)"),
        ('thresholds = { memory-reduction = 1.5 }', "thresholds.memory-reduction", "expected a number from 0 to 1"),
    ],
)
def test_wrong_config_names_file_and_key(tmp_path, body, key, problem):
    path = write_pyproject(tmp_path, f"[tool.verify-perf]\n{body}\n")
    with pytest.raises(UsageError) as error:
        load_config(str(path), required=True)
    message = str(error.value)
    assert message.startswith(f"{path}: [tool.verify-perf] {key}: ")
    assert problem in message


def test_invalid_toml_is_a_usage_error(tmp_path):
    path = write_pyproject(tmp_path, "[tool.verify-perf\n")
    with pytest.raises(UsageError, match="invalid TOML"):
        load_config(str(path), required=True)


def test_explicit_config_without_the_table_is_an_error(tmp_path):
    path = write_pyproject(tmp_path, "[project]\nname = 'x'\n")
    with pytest.raises(UsageError, match=r"no \[tool.verify-perf\] table"):
        load_config(str(path), required=True)


def test_closest_pyproject_with_the_table_wins(tmp_path):
    write_pyproject(tmp_path, "[tool.verify-perf]\nmin-score = 50\n")
    inner = tmp_path / "pkg"
    (inner / "sub").mkdir(parents=True)
    write_pyproject(inner, "[project]\nname = 'no table here'\n")
    (inner / "sub" / "train.py").write_text("x = 1\n")
    assert find_config(str(inner / "sub" / "train.py")) == str(tmp_path / "pyproject.toml")
