"""Per-file analysis across processes, results streamed back in input order.

Workers receive paths and rule codes, never trees; each result carries only findings and the
file's small heat summary, so memory stays flat however many files there are.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from verifier.config import Settings

# Below this many files a process pool costs more to start than it saves.
_MIN_FILES_PER_WORKER = 8


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def analyse_many(
    paths: Sequence[str],
    rule_codes: Sequence[str],
    settings: Settings,
    jobs: int,
    external: dict | None = None,
) -> Iterator:
    """Yield a FileResult for each path, in order, using up to `jobs` processes."""
    workers = min(jobs, max(1, len(paths) // _MIN_FILES_PER_WORKER))
    task = (tuple(rule_codes), settings, external)
    if workers <= 1:
        _init_worker(*task)
        yield from map(_analyse_one, paths)
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=task) as pool:
        yield from pool.map(_analyse_one, paths, chunksize=max(1, min(16, len(paths) // (workers * 8))))


_worker_state: dict = {}


def _init_worker(rule_codes: tuple[str, ...], settings: Settings, external: dict | None) -> None:
    from verifier.rules import all_rules

    by_code = {rule.code: rule for rule in all_rules()}
    _worker_state.update(rules=[by_code[code] for code in rule_codes], settings=settings, external=external)


def _analyse_one(path: str):
    from verifier.static.engine import analyze_file

    state = _worker_state
    return analyze_file(path, state["rules"], state["settings"], external=state["external"])
