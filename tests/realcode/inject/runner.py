"""Run verify-perf once per (training loop, path kind) and score the probes it found.

Runs go through verify-perf's command line, as the real-code scorer's do, on a copy of the
repository restricted to the target's scope; `jobs` runs go in parallel (each run itself uses
one worker, `-j 1`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tests.realcode.inject.path_kinds import KINDS, Site, inject
from tests.realcode.inject.scoring import Outcome, score_injection
from tests.realcode.inject.targets import Repository, Target
from tests.realcode.inject.workspace import analyse_copy, export_repository, site_for


@dataclass
class Results:
    outcomes: list[Outcome] = field(default_factory=list)
    # (target label, kind) -> why the kind was not run there
    skipped: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: dict[tuple[str, str], str] = field(default_factory=dict)
    seconds: dict[tuple[str, str], float] = field(default_factory=dict)


class NotApplicable(Exception):
    """The path kind has no form for this loop (a method of `self` outside a class)."""


def _one_run(target: Target, repository: Repository, kind: str, site: Site, pristine: str, work: str,
             verifier_cmd: str, timeout: float, keep: bool, whole: bool) -> tuple[list[Outcome], float]:
    injection = inject(kind, site)
    if injection is None:
        raise NotApplicable("does not apply to this loop")
    root = os.path.join(work, kind)
    started = time.monotonic()
    try:
        scope = (".",) if whole else target.scope
        findings = analyse_copy(pristine, root, repository.mirror, injection.files, scope, verifier_cmd, timeout)
        return score_injection(findings, injection, repository.name, target.label), time.monotonic() - started
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def run_targets(targets: list[Target], repositories: dict[str, Repository], mirrors: str, verifier_cmd: str,
                kinds: list[str] | None = None, jobs: int = 2, timeout: float = 900,
                keep_dir: str | None = None, whole_repositories: bool = False, progress=print) -> Results:
    """Every path kind on every target; results in a stable order whatever the parallelism.

    `whole_repositories` analyses each whole copy instead of the table's scope, to check that
    the narrower scope hides nothing.
    """
    kinds = kinds or list(KINDS)
    results = Results()
    base = keep_dir or tempfile.mkdtemp(prefix="inject-")
    os.makedirs(base, exist_ok=True)
    try:
        pristine_of: dict[str, str] = {}
        tasks = []
        for index, target in enumerate(targets):
            repository = repositories[target.repo]
            if repository.mirror not in pristine_of:
                pristine = os.path.join(base, "pristine", repository.mirror)
                export_repository(mirrors, repository.mirror, repository.commit, pristine)
                pristine_of[repository.mirror] = pristine
            pristine = pristine_of[repository.mirror]
            try:
                site = site_for(target, pristine)
            except LookupError as error:
                for kind in kinds:
                    results.errors[(target.label, kind)] = str(error)
                progress(f"{target.label}: ERROR {error}")
                continue
            work = os.path.join(base, f"t{index:02d}")
            for kind in kinds:
                tasks.append((target, repository, kind, site, pristine, work))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [pool.submit(_one_run, t, r, k, s, p, w, verifier_cmd, timeout, keep_dir is not None,
                                   whole_repositories)
                       for t, r, k, s, p, w in tasks]
            for (target, _, kind, *_), future in zip(tasks, futures):
                key = (target.label, kind)
                try:
                    outcomes, seconds = future.result()
                except NotApplicable as why:
                    results.skipped[key] = str(why)
                    continue
                except Exception as error:  # one broken run must not hide the others
                    results.errors[key] = f"{type(error).__name__}: {error}"
                    progress(f"{target.label} {kind}: ERROR {results.errors[key]}")
                    continue
                results.outcomes += outcomes
                results.seconds[key] = seconds
                found = sum(o.found for o in outcomes)
                progress(f"{target.label} {kind}: {found}/{len(outcomes)} found ({seconds:.1f} s)")
    finally:
        if keep_dir is None:
            shutil.rmtree(base, ignore_errors=True)
    return results
