"""Generate every pair, run verify-perf once per distinct variant, and compare.

Pairs of one probed loop share its probed file, so the variants are deduplicated by content
before running; each run analyses a fresh copy of the pristine export with the variant's files
written over it (`inject.workspace.analyse_copy`), `jobs` at a time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tests.realcode.inject.targets import Repository, Target
from tests.realcode.inject.workspace import analyse_copy, export_repository
from tests.realcode.invariance.compare import Verdict, compare
from tests.realcode.invariance.kinds import KINDS, Kind
from tests.realcode.invariance.probed import ANCHORS, NotApplicable, Pair, probe

# The injection table analyses all of accelerate's `examples/` for each script (several seconds a
# run); the scripts import none of it, and at 2b4a481 their findings are the same either way.
SCRIPT_ONLY = {
    "huggingface/accelerate:examples/nlp_example.py": ("examples/nlp_example.py",),
    "huggingface/accelerate:examples/complete_nlp_example.py": ("examples/complete_nlp_example.py",),
}


def scope_of(target: Target) -> tuple[str, ...]:
    return SCRIPT_ONLY.get(target.label, target.scope)


@dataclass
class Results:
    verdicts: list[Verdict] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)   # (loop@anchor, kind, why)
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    runs: int = 0
    run_seconds: float = 0.0


def variant_key(files: dict[str, str]) -> str:
    digest = hashlib.sha1()
    for path, text in sorted(files.items()):
        digest.update(path.encode() + b"\0" + text.encode() + b"\0")
    return digest.hexdigest()


@dataclass
class _Planned:
    pair: Pair
    kind: Kind
    target: Target
    pristine: str


def generate(targets: list[Target], repositories: dict[str, Repository], mirrors: str, base: str,
             kinds: tuple[Kind, ...] = KINDS, anchors: tuple[str, ...] = ANCHORS,
             results: Results | None = None, progress=print) -> tuple[list[_Planned], Results]:
    """Every applicable pair; what does not apply or fails to generate goes into the results."""
    results = results or Results()
    planned: list[_Planned] = []
    pristine_of: dict[str, str] = {}
    for target in targets:
        repository = repositories[target.repo]
        if repository.mirror not in pristine_of:
            pristine = os.path.join(base, "pristine", repository.mirror)
            export_repository(mirrors, repository.mirror, repository.commit, pristine)
            pristine_of[repository.mirror] = pristine
        pristine = pristine_of[repository.mirror]
        for anchor in anchors:
            label = f"{target.label}@{anchor}"
            try:
                probed = probe(target, pristine, anchor)
            except NotApplicable as why:
                results.skipped += [(label, kind.name, str(why)) for kind in kinds]
                continue
            except (LookupError, ValueError, SyntaxError) as error:
                results.errors += [(label, kind.name, f"probing: {error}") for kind in kinds]
                progress(f"{label}: ERROR {error}")
                continue
            for kind in kinds:
                try:
                    planned.append(_Planned(kind.make(probed), kind, target, pristine))
                except NotApplicable as why:
                    results.skipped.append((label, kind.name, str(why)))
                except Exception as error:  # noqa: BLE001 - one broken generator must not hide the other pairs
                    results.errors.append((label, kind.name, f"{type(error).__name__}: {error}"))
                    progress(f"{label} {kind.name}: ERROR {type(error).__name__}: {error}")
    return planned, results


def run(targets: list[Target], repositories: dict[str, Repository], mirrors: str, verifier_cmd: str,
        kinds: tuple[Kind, ...] = KINDS, anchors: tuple[str, ...] = ANCHORS, jobs: int = 2,
        timeout: float = 900, keep_dir: str | None = None, progress=print) -> Results:
    base = keep_dir or tempfile.mkdtemp(prefix="invariance-")
    os.makedirs(base, exist_ok=True)
    try:
        planned, results = generate(targets, repositories, mirrors, base, kinds, anchors, progress=progress)
        variants: dict[str, tuple[Target, str, dict[str, str]]] = {}
        for item in planned:
            for files in (item.pair.original, item.pair.rewritten):
                variants.setdefault(variant_key(files), (item.target, item.pristine, files))
        progress(f"{len(planned)} pairs, {len(variants)} distinct variants to analyse")
        findings: dict[str, list[dict]] = {}
        failures: dict[str, str] = {}
        started = time.monotonic()

        def analyse(index: int, key: str) -> tuple[str, list[dict], float]:
            target, pristine, files = variants[key]
            root = os.path.join(base, f"v{index:04d}")
            began = time.monotonic()
            try:
                mirror = repositories[target.repo].mirror
                return key, analyse_copy(pristine, root, mirror, files, scope_of(target), verifier_cmd, timeout), \
                    time.monotonic() - began
            finally:
                if keep_dir is None:
                    shutil.rmtree(root, ignore_errors=True)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(analyse, i, key): key for i, key in enumerate(variants)}
            for done, (future, key) in enumerate(futures.items(), start=1):
                try:
                    _, found, seconds = future.result()
                    findings[key] = found
                    progress(f"[{done}/{len(futures)}] {variants[key][0].label}: {len(found)} findings ({seconds:.1f} s)")
                except Exception as error:  # noqa: BLE001 - one broken run must not hide the others
                    failures[key] = f"{type(error).__name__}: {error}"
                    progress(f"[{done}/{len(futures)}] {variants[key][0].label}: ERROR {failures[key]}")
        results.runs = len(variants)
        results.run_seconds = time.monotonic() - started
        for item in planned:
            keys = variant_key(item.pair.original), variant_key(item.pair.rewritten)
            broken = [failures[k] for k in keys if k in failures]
            if broken:
                results.errors.append((item.pair.label, item.kind.name, f"verify-perf: {broken[0]}"))
                continue
            results.verdicts.append(compare(item.pair, item.kind.preserving, findings[keys[0]], findings[keys[1]]))
        return results
    finally:
        if keep_dir is None:
            shutil.rmtree(base, ignore_errors=True)
