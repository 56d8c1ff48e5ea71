"""Run many cases, a few at a time, each in a temporary folder of its own."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.hostile.case import Case
from tests.hostile.runner import Outcome, run_case


def run_one(case: Case, keep: str | None = None) -> Outcome:
    if keep:
        folder = Path(keep) / case.ident.replace("/", "--")
        folder.mkdir(parents=True, exist_ok=False)
        return run_case(case, folder)
    with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
        return run_case(case, Path(folder))


def run_all(cases: Iterable[Case], jobs: int = 2, keep: str | None = None,
            on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Outcomes in the cases' order; threads suffice, the work is in the subprocesses."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(run_one, case, keep) for case in cases]
        outcomes = []
        for future in futures:
            outcome = future.result()
            if on_done:
                on_done(outcome)
            outcomes.append(outcome)
    return outcomes
