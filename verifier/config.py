"""Effective settings of a run: rule selection, severity overrides, excludes."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from verifier.findings import Severity
from verifier.static.discovery import UsageError


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    prefilter: bool = True
    # How the run is carried out; not part of the cache key.
    jobs: int = 1
    cache_dir: str | None = None
    file_timeout: float | None = 60.0

    def selected_rules(self) -> list:
        from verifier.rules import rule_by_selector

        chosen: dict[str, type] = {}
        for selector in self.select:
            matches = rule_by_selector(selector)
            if not matches:
                raise UsageError(f"--select: unknown rule code or name {selector!r}")
            chosen.update((rule.code, rule) for rule in matches)
        for selector in self.ignore:
            matches = rule_by_selector(selector)
            if not matches:
                raise UsageError(f"--ignore: unknown rule code or name {selector!r}")
            for rule in matches:
                chosen.pop(rule.code, None)
        # Like a syntax error in ruff, an unanalysable file is reported unless ignored outright.
        ignored = {rule.code for s in self.ignore for rule in rule_by_selector(s)}
        for rule in rule_by_selector("VP900"):
            if rule.code not in ignored:
                chosen.setdefault(rule.code, rule)
        return [chosen[code] for code in sorted(chosen)]

    def ignored_in_file(self, path: str) -> set[str]:
        """Codes ignored for `path` by per-file-ignores (glob patterns, posix separators)."""
        posix = path.replace("\\", "/")
        codes: set[str] = set()
        for pattern, listed in self.per_file_ignores.items():
            if fnmatch.fnmatch(posix, pattern) or fnmatch.fnmatch(posix, f"*/{pattern}"):
                codes.update(code.upper() for code in listed)
        return codes
