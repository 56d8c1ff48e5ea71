"""Effective settings of a run, and reading them from `[tool.verify-perf]` in a pyproject.toml.

A wrong config is a usage error naming the file and the key, never a silent default: a gate
that quietly ignores `min-score = "90"` is a gate nobody configured.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from typing import Any

from verifier.dynamic.results import Thresholds
from verifier.findings import Heat, Severity
from verifier.errors import UsageError
from verifier.static.patterns import PathPattern, matches_path
from verifier.static.source import DEFAULT_MAX_FILE_SIZE, UnreadableSource, read_bytes

DEFAULT_BLOCK_ON = frozenset({Severity.CRITICAL, Severity.HIGH})
DEFAULT_MIN_SCORE = 70
DEFAULT_REGRESSION_TOLERANCE = 0.05
CONFIG_TABLE = "tool.verify-perf"
_MAX_CONFIG_SIZE = 4 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[PathPattern, ...] = ()
    # Discovery skips what `.gitignore` and `.ignore` leave out (ruff's `respect-gitignore`).
    respect_gitignore: bool = True
    # Configured severities by rule code, per heat (`VP201 = "HIGH"` sets every heat).
    severity: dict[str, dict[Heat, Severity]] = field(default_factory=dict)
    per_file_ignores: tuple[tuple[PathPattern, tuple[str, ...]], ...] = ()
    prefilter: bool = True
    # "block": a file that may be valid Python but could not be analysed is a HIGH VP900; "warn": INFO.
    unanalysable: str = "block"
    # Test code (tests/, test_*.py, *_test.py, conftest.py) runs a few steps on purpose: not a
    # training hot path unless the project says so.
    include_tests: bool = False
    # Rules still in preview run only when asked for (see `Rule.preview`).
    preview: bool = False
    # A suppression comment silences only when a reason follows its codes (`noqa: VP201 -- why`).
    require_suppression_reason: bool = False
    max_file_size: int | None = DEFAULT_MAX_FILE_SIZE
    file_timeout: float | None = 60.0
    # The whole run's analysis: files not done by then are VP900 (`run_limit_message`).
    run_timeout: float | None = 600.0
    # The project's configuration defaults (argparse options, config dataclass fields), read
    # from its files before the analysis (`cli_defaults.project_defaults`): part of the cache key.
    config_defaults: tuple[tuple[str, object], ...] = ()
    # How the run is carried out; not part of the cache key.
    jobs: int = 1
    cache_dir: str | None = None
    block_on: frozenset[Severity] = DEFAULT_BLOCK_ON
    min_score: int = DEFAULT_MIN_SCORE
    block_on_new_only: bool = False
    thresholds: Thresholds = field(default_factory=Thresholds)
    regression_tolerance: float = DEFAULT_REGRESSION_TOLERANCE
    config_path: str | None = None

    def selected_rules(self) -> list:
        from verifier.rules import rule_by_selector

        chosen: dict[str, type] = {}
        for selector in self.select:
            matches = rule_by_selector(selector)
            if not matches:
                raise UsageError(f"--select: unknown rule code or name {selector!r}")
            if not self.preview and all(rule.preview for rule in matches):
                # A selection that names preview rules only would silently do nothing: a gate
                # nobody configured. Prefixes and ALL just leave preview rules out.
                raise UsageError(f"--select: {selector!r} names preview rules only; enable them with "
                                 "--preview (or `preview = true` in [tool.verify-perf])")
            chosen.update((rule.code, rule) for rule in matches if self.preview or not rule.preview)
        for selector in self.ignore:
            matches = rule_by_selector(selector)
            if not matches:
                raise UsageError(f"--ignore: unknown rule code or name {selector!r}")
            for rule in matches:
                chosen.pop(rule.code, None)
        # Like a syntax error in ruff, an unanalysable file (VP900) and a suppression that names no
        # rule or silences nothing (VP901, VP902) are reported unless ignored outright.
        ignored = {rule.code for s in self.ignore for rule in rule_by_selector(s)}
        for rule in rule_by_selector("VP9"):
            if rule.code not in ignored:
                chosen.setdefault(rule.code, rule)
        return [chosen[code] for code in sorted(chosen)]

    def severity_at(self, code: str, heat: Heat, default: Severity) -> Severity:
        """The configured severity of rule `code` at `heat`, else `default` (the rule's own)."""
        return self.severity.get(code, {}).get(heat, default)

    def codes_run_in(self, path: str) -> set[str]:
        """Codes of the rules that run on `path`: the selection less its per-file-ignores."""
        ignored = self.ignored_in_file(path)
        return {rule.code for rule in self.selected_rules() if rule.code not in ignored}

    def ignored_in_file(self, path: str) -> set[str]:
        """Codes of the rules per-file-ignores turns off for `path` (each entry a code, a prefix,
        ALL or a name, read as everywhere else): a pattern naming the file or one of its folders
        below the config file's folder."""
        from verifier.rules import rule_by_selector

        codes: set[str] = set()
        for pattern, listed in self.per_file_ignores:
            if matches_path(path, (pattern,), pattern.anchor or None):
                codes.update(rule.code for selector in listed for rule in rule_by_selector(selector))
        return codes


@dataclass(frozen=True)
class FileConfig:
    """What `[tool.verify-perf]` set, already validated; None means "not set, use the default"."""

    path: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[PathPattern, ...] = ()
    respect_gitignore: bool | None = None
    severity: dict[str, dict[Heat, Severity]] = field(default_factory=dict)
    per_file_ignores: tuple[tuple[PathPattern, tuple[str, ...]], ...] = ()
    block_on: frozenset[Severity] | None = None
    min_score: int | None = None
    block_on_new_only: bool | None = None
    unanalysable: str | None = None
    include_tests: bool | None = None
    preview: bool | None = None
    require_suppression_reason: bool | None = None
    max_file_size: int | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    regression_tolerance: float | None = None


def find_config(start: str) -> str | None:
    """The closest pyproject.toml at or above `start` that has a `[tool.verify-perf]` table."""
    folder = os.path.abspath(start)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(candidate) and _tool_table(_read_toml(candidate)) is not None:
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load_config(path: str, *, required: bool) -> FileConfig:
    """Read and validate `[tool.verify-perf]` from `path` (required: named with --config)."""
    table = _tool_table(_read_toml(path))
    if table is None:
        if required:
            raise UsageError(f"{path}: no [{CONFIG_TABLE}] table")
        return FileConfig(path=None)
    return _Validator(path).config(table)


def _read_toml(path: str) -> dict[str, Any]:
    try:
        return tomllib.loads(read_bytes(path, _MAX_CONFIG_SIZE).decode("utf-8"))
    except UnreadableSource as error:
        raise UsageError(f"{path}: cannot read config: {str(error).removeprefix('cannot read file: ')}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: {error}") from None
    except ValueError:
        # tomllib converts integers as it reads them; Python refuses more than 4,300 digits.
        raise UsageError(f"{path}: invalid TOML: an integer with too many digits to read") from None
    except RecursionError:
        raise UsageError(f"{path}: invalid TOML: values nested too deeply") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{path}: invalid TOML: not UTF-8 ({error.reason})") from None


def _tool_table(document: dict[str, Any]) -> Any:
    tool = document.get("tool")
    return tool.get("verify-perf") if isinstance(tool, dict) else None


_THRESHOLD_KEYS = ("speedup", "memory-reduction", "accuracy-drop", "regression-tolerance")
_KEYS = (
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "respect-gitignore", "severity",
    "per-file-ignores", "block-on", "min-score", "block-on-new-only", "unanalysable", "include-tests", "preview", "max-file-size", "thresholds",
    "require-suppression-reason",
)
UNANALYSABLE_POLICIES = ("block", "warn")
# Heats by the heat model's names, hottest first, as `severity` tables name them.
HEATS_NAMED = (Heat.STEP, Heat.EVAL, Heat.EPOCH, Heat.ONCE)


class _Validator:
    """Checks one table; every message starts with the file and the key at fault."""

    def __init__(self, path: str) -> None:
        self.path = path
        # Paths in `exclude` and `per-file-ignores` are relative to the declaring file's folder.
        self.folder = os.path.dirname(os.path.abspath(path))

    def fail(self, key: str, problem: str) -> UsageError:
        return UsageError(f"{self.path}: [{CONFIG_TABLE}] {key}: {problem}")

    def config(self, table: Any) -> FileConfig:
        if not isinstance(table, dict):
            raise UsageError(f"{self.path}: [{CONFIG_TABLE}] must be a table")
        self.known_keys(table, _KEYS, "")
        thresholds, tolerance = self.thresholds(table.get("thresholds", {}))
        return FileConfig(
            path=self.path,
            select=tuple(self.rule_list(table, "select")) if "select" in table else None,
            ignore=tuple(self.rule_list(table, "ignore")),
            extend_select=tuple(self.rule_list(table, "extend-select")),
            # `exclude` already adds to the default excludes (ruff's `exclude` replaces them), so
            # `extend-exclude`, accepted for ruff-style configs, adds in the same way.
            exclude=tuple(
                PathPattern.at(glob, self.folder)
                for key in ("exclude", "extend-exclude") for glob in self.string_list(table, key)
            ),
            respect_gitignore=self.boolean(table, "respect-gitignore") if "respect-gitignore" in table else None,
            severity=self.severity_overrides(table.get("severity", {})),
            per_file_ignores=self.per_file_ignores(table.get("per-file-ignores", {})),
            block_on=self.block_on(table) if "block-on" in table else None,
            min_score=self.min_score(table) if "min-score" in table else None,
            block_on_new_only=self.boolean(table, "block-on-new-only") if "block-on-new-only" in table else None,
            unanalysable=self.choice(table, "unanalysable", UNANALYSABLE_POLICIES) if "unanalysable" in table else None,
            include_tests=self.boolean(table, "include-tests") if "include-tests" in table else None,
            preview=self.boolean(table, "preview") if "preview" in table else None,
            require_suppression_reason=(
                self.boolean(table, "require-suppression-reason") if "require-suppression-reason" in table else None
            ),
            max_file_size=self.size(table, "max-file-size") if "max-file-size" in table else None,
            thresholds=thresholds,
            regression_tolerance=tolerance,
        )

    def known_keys(self, table: dict, allowed: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(allowed)})"
                raise self.fail(prefix + key, f"unknown key{hint}")

    def string_list(self, table: dict, name: str, *, key: str | None = None) -> list[str]:
        value = table.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(key or name, f"expected a list of strings, got {_shown(value)}")
        return value

    def rule_list(self, table: dict, name: str, *, key: str | None = None) -> list[str]:
        selectors = self.string_list(table, name, key=key)
        for selector in selectors:
            self.rule_code(key or name, selector)
        return selectors

    def rule_code(self, key: str, selector: str) -> str:
        from verifier.rules import rule_by_selector

        if not selector.strip():
            raise self.fail(key, "empty rule code (an empty string would match every rule)")
        matches = rule_by_selector(selector)
        if not matches:
            raise self.fail(key, f"unknown rule code or name {selector!r}")
        return matches[0].code

    def severity_overrides(self, value: Any) -> dict[str, dict[Heat, Severity]]:
        """`VP201 = "HIGH"` (every heat) or `VP201 = { step = "HIGH", eval = "LOW" }` (those heats);
        later keys win, heat by heat."""
        if not isinstance(value, dict):
            raise self.fail("severity", f"expected a table of rule = severity, got {_shown(value)}")
        from verifier.rules import rule_by_selector

        overrides: dict[str, dict[Heat, Severity]] = {}
        for selector, level in value.items():
            key = f"severity.{selector}"
            self.rule_code(key, selector)
            if isinstance(level, str):
                levels = dict.fromkeys(Heat, self.severity_name(key, level))
            elif isinstance(level, dict):
                levels = self.severity_by_heat(key, level)
            else:
                raise self.fail(key, f"expected a severity name or a table of heat = severity, got {_shown(level)}")
            for rule in rule_by_selector(selector):
                overrides.setdefault(rule.code, {}).update(levels)
        return overrides

    def severity_by_heat(self, key: str, table: dict) -> dict[Heat, Severity]:
        names = tuple(heat.label for heat in HEATS_NAMED)
        if not table:
            raise self.fail(key, f"empty table: name the heats it sets ({', '.join(names)})")
        levels = {}
        for name, level in table.items():
            heat = next((h for h in HEATS_NAMED if h.label == name), None)
            if heat is None:
                close = difflib.get_close_matches(str(name), names, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.fail(f"{key}.{name}", f"unknown heat ({hint}heats: {', '.join(names)})")
            levels[heat] = self.severity_name(f"{key}.{name}", level)
        return levels

    def severity_name(self, key: str, level: Any) -> Severity:
        if not isinstance(level, str):
            raise self.fail(key, f"expected a severity name, got {_shown(level)}")
        try:
            return Severity.parse(level)
        except ValueError as error:
            raise self.fail(key, str(error)) from None

    def per_file_ignores(self, value: Any) -> tuple[tuple[PathPattern, tuple[str, ...]], ...]:
        if not isinstance(value, dict):
            raise self.fail("per-file-ignores", f"expected a table of glob = [codes], got {_shown(value)}")
        return tuple(
            (PathPattern.at(glob, self.folder), tuple(self.rule_list(value, glob, key=f"per-file-ignores.{glob!r}")))
            for glob in value
        )

    def block_on(self, table: dict) -> frozenset[Severity]:
        names = self.string_list(table, "block-on")
        try:
            return frozenset(Severity.parse(name) for name in names)
        except ValueError as error:
            raise self.fail("block-on", str(error)) from None

    def min_score(self, table: dict) -> int:
        value = table["min-score"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            raise self.fail("min-score", f"expected an integer from 0 to 100, got {_shown(value)}")
        return value

    def choice(self, table: dict, key: str, allowed: tuple[str, ...]) -> str:
        value = table[key]
        if value not in allowed:
            raise self.fail(key, f"expected one of {', '.join(map(repr, allowed))}, got {_shown(value)}")
        return value

    def size(self, table: dict, key: str) -> int:
        value = table[key]
        try:
            return parse_size(value)
        except ValueError as error:
            raise self.fail(key, f"{error}, got {_shown(value)}") from None

    def boolean(self, table: dict, key: str) -> bool:
        value = table[key]
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_shown(value)}")
        return value

    def thresholds(self, value: Any) -> tuple[Thresholds, float | None]:
        if not isinstance(value, dict):
            raise self.fail("thresholds", f"expected a table, got {_shown(value)}")
        self.known_keys(value, _THRESHOLD_KEYS, "thresholds.")
        defaults = Thresholds()
        speedup = self.number(value, "speedup", defaults.min_speedup, low=0.0, high=None)
        memory = self.number(value, "memory-reduction", defaults.min_memory_reduction, low=0.0, high=1.0)
        accuracy = self.number(value, "accuracy-drop", defaults.max_accuracy_degradation, low=0.0, high=1.0)
        tolerance = self.number(value, "regression-tolerance", None, low=0.0, high=None)
        return Thresholds(speedup, memory, accuracy), tolerance

    def number(self, table: dict, key: str, default: float | None, *, low: float, high: float | None) -> Any:
        if key not in table:
            return default
        value = table[key]
        # An integer past float's range (10**400) is no number of seconds, ratio or fraction either.
        in_range = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= _LARGEST
        if not in_range or (high is not None and value > high):
            bound = f"from {low:g} to {high:g}" if high is not None else f"of at least {low:g}"
            raise self.fail(f"thresholds.{key}", f"expected a number {bound}, got {_shown(value)}")
        return float(value)


_LARGEST = sys.float_info.max
# ASCII digits only (`\d` would take `٣`), at most as many as the largest size has.
_SIZE = re.compile(r"\s*([0-9]{1,16})\s*(B|KiB|MiB|GiB)?\s*")
_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
MAX_SIZE = 1 << 40


def parse_size(value: Any) -> int:
    """A size in bytes: an integer, or a string such as `10MiB` (units B, KiB, MiB, GiB)."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (match := _SIZE.fullmatch(value)):
        size = int(match[1]) * _UNITS[match[2]]
    else:
        raise ValueError("expected a size such as 10MiB or a number of bytes")
    if not 1 <= size <= MAX_SIZE:
        raise ValueError("expected a size from 1 byte to 1024 GiB")
    return size


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:  # a 4,000-digit integer is named, not printed
        text = f"{text[:40]}... ({len(text)} characters)"
    return f"{type(value).__name__} {text}"
