"""Every case of every category, generated deterministically (each category seeds its own
random numbers), and the fast subset the default test run takes."""

from __future__ import annotations

from tests.hostile import (
    baselines,
    caches,
    configs,
    deep_code,
    environment,
    git_diff,
    mutations,
    names,
    outputs,
    signals,
    source_encodings,
    special_files,
)
from tests.hostile.case import Case

CATEGORIES = (names, source_encodings, deep_code, configs, baselines, caches, git_diff, outputs, environment, signals,
              special_files, mutations)


def all_cases() -> list[Case]:
    cases = [case for module in CATEGORIES for case in module.cases()]
    seen: set[str] = set()
    for case in cases:
        if case.ident in seen:
            raise ValueError(f"two cases named {case.ident}")
        seen.add(case.ident)
    return cases


def fast_cases() -> list[Case]:
    return [case for case in all_cases() if case.fast]
