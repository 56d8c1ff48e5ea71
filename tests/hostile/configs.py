"""Hostile configurations: every key of `[tool.verify-perf]` given values of the wrong type,
out of range, integers past Python's digit limit, dates, NaN and infinities; unknown keys;
broken, huge, deeply nested or non-UTF-8 TOML; config files that are folders, FIFOs, devices or
links. A wrong config stops the run with exit 2 and a message naming the file, before anything is
written; a valid but unusual one (a documented choice) gives its documented result."""

from __future__ import annotations

import os

from tests.hostile.case import CACHED, Case
from tests.hostile.sources import GOOD, TRAIN
from tests.hostile.trees import JSON, combine, files, link

CATEGORY = "configs"
HUGE = "9" * 5000
WRONG_ANYWHERE = ["1", "true", "1.5", "1979-05-27T07:32:00Z", HUGE, "inf", "nan", "{ a = 1 }", "[[1]]"]
KEYS = {
    # key: values of the wrong type or range, beyond WRONG_ANYWHERE
    "select": ['"VP201"', "[1]", '["VP2O1"]', '[""]', '["  "]'],
    "extend-select": ['"VP2"', '["nope"]'],
    "ignore": ['["VP999"]', "[true]"],
    "exclude": ['"*.py"', "[1]"],
    "block-on": ['["ULTRA"]', '"HIGH"', "[1]"],
    "min-score": ['"80"', "80.5", "-1", "101", "[80]", "1e400"],
    "block-on-new-only": ['"true"', "0"],
    "include-tests": ['"yes"', "[true]"],
    "preview": ['"false"'],
    "unanalysable": ['"maybe"', '["warn"]', '"BLOCK"'],
    "max-file-size": ['"10 parsecs"', "-1", '""', '"1e3MiB"', '"99999999999999999GiB"', '"١٠MiB"', '"10 MiB MiB"'],
    "severity": ['"HIGH"', "[]", '{ VP201 = 1 }', '{ VP201 = "ULTRA" }', '{ VP999 = "HIGH" }', '{ "" = "HIGH" }',
                 '{ VP201 = ["HIGH"] }'],
    "per-file-ignores": ["[]", '"x"', '{ "*" = "VP201" }', '{ "*" = [1] }', '{ "*" = ["VP999"] }'],
    "thresholds": ['"fast"', "[]", '{ speedup = "1.5" }', "{ speedup = -1 }", "{ speedup = nan }",
                   "{ speedup = inf }", "{ memory-reduction = 2 }", "{ accuracy-drop = -0.1 }", "{ unknown = 1 }",
                   f"{{ speedup = {HUGE} }}", "{ regression-tolerance = true }", "{ speedup = 1e400 }"],
}
BOOLEAN_KEYS = ("block-on-new-only", "include-tests", "preview")
UNKNOWN_KEYS = ["selct", "min_score", "Select", '""', '"tool.verify-perf"', '"select "', "extends", "rules"]
BROKEN_TOML = {
    "unterminated-string": '[tool.verify-perf]\nselect = ["VP2\n',
    "duplicate-key": '[tool.verify-perf]\nmin-score = 1\nmin-score = 2\n',
    "duplicate-table": '[tool.verify-perf]\n[tool.verify-perf]\n',
    "table-and-array": '[tool.verify-perf]\n[[tool.verify-perf]]\n',
    "array-of-tables": '[[tool.verify-perf]]\nselect = ["VP2"]\n',
    "tool-is-array": 'tool = [1]\n',
    "verify-perf-is-string": '[tool]\nverify-perf = "strict"\n',
    "verify-perf-is-integer": '[tool]\nverify-perf = 1\n',
    "nested-arrays": "[tool.verify-perf]\nselect = " + "[" * 10_000 + "]" * 10_000 + "\n",
    "nested-inline-tables": "[tool.verify-perf]\nseverity = " + "{ a = " * 3000 + "1" + " }" * 3000 + "\n",
    "huge-integer-elsewhere": f"[project]\nversion = {HUGE}\n[tool.verify-perf]\nselect = [\"ALL\"]\n",
    "control-character": '[tool.verify-perf]\nselect = ["VP2\x01"]\n',
    "bare-cr": '[tool.verify-perf]\rselect = ["VP2"]\r',
    "null-byte": '[tool.verify-perf]\nselect = ["VP2"]\x00\n',
    "lone-surrogate-escape": '[tool.verify-perf]\nselect = ["\\ud800"]\n',
    "key-with-newline-escape": '[tool.verify-perf]\n"sel\\nect" = ["VP2"]\n',
    "many-keys": "[tool.verify-perf]\n" + "".join(f"k{i} = {i}\n" for i in range(50_000)),
}
RAW_TOML = {
    "bom": b"\xef\xbb\xbf[tool.verify-perf]\nselect = [\"ALL\"]\n",
    "latin-1": b"[tool.verify-perf]\n# caf\xe9\nselect = [\"ALL\"]\n",
    "utf-16": "[tool.verify-perf]\nselect = [\"ALL\"]\n".encode("utf-16"),
    "over-4-mib": b"[tool.verify-perf]\n" + b"#" * (5 << 20) + b"\n",
}


def _refused(name: str, text: str | bytes, *, fast: bool = False) -> Case:
    """A config that must stop the run: exit 2 naming the file, nothing written, no key made."""
    build = files({"pyproject.toml": text, "train.py": TRAIN})
    return Case(CATEGORY, name, build, (".", *JSON), 2, stderr="pyproject.toml", fast=fast)


def _toml_value(key: str, value: str) -> str:
    if key == "thresholds" and value.startswith("{"):
        return "[tool.verify-perf.thresholds]\n" + value.strip("{} ").replace(", ", "\n") + "\n"
    return f"[tool.verify-perf]\n{key} = {value}\n"


def _documented() -> list[Case]:
    """Valid settings with a documented effect on the blocking train.py."""
    choices = [
        ("exclude-everything", 'exclude = ["*"]', (".",), 0),
        ("exclude-but-named", 'exclude = ["train.py"]', ("train.py",), 1),
        ("exclude-named-forced", 'exclude = ["train.py"]', ("train.py", "--force-exclude"), 0),
        ("select-vp9-only", 'select = ["VP9"]', (".",), 0),
        ("block-on-nothing", "block-on = []", (".",), 0),
        ("severity-info", 'severity = { VP203 = "INFO" }', (".",), 0),
        ("severity-critical", 'severity = { VP306 = "CRITICAL" }', (".",), 1),
        ("min-score-0", "min-score = 0", (".",), 1),
        ("per-file-ignores-all", 'per-file-ignores = { "*" = ["ALL"] }', (".",), 0),
        ("ignore-by-name", 'ignore = ["synchronize-in-loop"]', (".",), 0),
        ("empty-table", "", (".",), 1),
        # An empty selection keeps the default one (every rule), so nothing is silenced by it.
        ("empty-lists", "select = []\nignore = []\nexclude = []", (".",), 1),
    ]
    cases = []
    for name, body, paths, code in choices:
        build = files({"pyproject.toml": f"[tool.verify-perf]\n{body}\n", "train.py": TRAIN})
        cases.append(Case(CATEGORY, f"documented:{name}", build, (*paths, *JSON), code, outputs=CACHED))
    build = files({"pyproject.toml": "[tool.verify-perf]\nmin-score = 100\n", "good.py": GOOD})
    cases.append(Case(CATEGORY, "documented:min-score-100-clean", build, (".", *JSON), 0, outputs=CACHED))
    return cases


def _config_files() -> list[Case]:
    """Config files that are not plain files, named with --config or found upwards."""
    train = files({"train.py": TRAIN})

    def fifo(sandbox) -> None:
        os.mkfifo(sandbox.path("pyproject.toml"))

    def folder(sandbox) -> None:
        sandbox.path("pyproject.toml").mkdir()

    found = [
        ("found-fifo", fifo, 1), ("found-folder", folder, 1),
        ("found-dangling-link", link("pyproject.toml", "missing.toml"), 1),
        ("found-link-loop", combine(link("pyproject.toml", "loop.toml"), link("loop.toml", "pyproject.toml")), 1),
        ("found-link-to-zero", link("pyproject.toml", "/dev/zero"), 1),
        ("found-link-to-home-config", combine(
            files({"~/.config/shared.toml": '[tool.verify-perf]\nselect = ["VP3"]\n'}),
            link("pyproject.toml", "@HOME@/.config/shared.toml")), 0),
    ]
    cases = [Case(CATEGORY, name, combine(train, build), (".", *JSON), code, outputs=CACHED) for name, build, code in found]
    named = [
        ("config-dev-null", "/dev/null"), ("config-dev-zero", "/dev/zero"), ("config-folder", "."),
        ("config-missing", "missing.toml"), ("config-python-file", "train.py"), ("config-empty-name", ""),
        ("config-proc-self", "/proc/self/environ"), ("config-dev-stdin", "/dev/stdin"),
    ]
    for name, target in named:
        cases.append(Case(CATEGORY, name, train, (".", "--config", target, *JSON), 2, stderr="verify-perf: error:",
                          fast=name == "config-dev-zero"))
    cases.append(Case(CATEGORY, "config-and-isolated", train, (".", "--config", "x.toml", "--isolated", *JSON), 2,
                      stderr="--isolated"))
    return cases


def cases() -> list[Case]:
    built = []
    for key, values in KEYS.items():
        for value in [*WRONG_ANYWHERE, *values]:
            if key == "thresholds" and value.startswith("{") and value in WRONG_ANYWHERE:
                continue
            if (value == "1" and key in ("min-score", "max-file-size")) or (value == "true" and key in BOOLEAN_KEYS):
                continue  # valid there
            built.append(_refused(f"{key}={value[:40]}", _toml_value(key, value),
                                  fast=(key, value) in {("min-score", '"80"'), ("thresholds", "nan")}))
    for key in UNKNOWN_KEYS:
        built.append(_refused(f"unknown-key:{key}", f"[tool.verify-perf]\n{key} = 1\n"))
    built.append(_refused("unknown-table", "[tool.verify-perf.extra]\nx = 1\n"))
    for name, text in BROKEN_TOML.items():
        if name in ("tool-is-array",):
            built.append(Case(CATEGORY, f"toml:{name}", files({"pyproject.toml": text, "train.py": TRAIN}),
                              (".", *JSON), 1, outputs=CACHED))
            continue
        built.append(_refused(f"toml:{name}", text, fast=name == "nested-arrays"))
    for name, data in RAW_TOML.items():
        built.append(_refused(f"toml:{name}", data))
    return built + _documented() + _config_files()
