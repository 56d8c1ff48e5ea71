"""Static findings and runtime evidence, joined both ways (only for a measured --entry).

- A finding at a line where the sync counter saw syncs reads "confirmed at runtime: N syncs
  per step".
- A line that synced at least once per step with no finding becomes a finding of its own,
  `VP290 runtime-sync` (runtime-only, with its count).
- A per-step finding in a file the measured step ran, on lines that never ran, reads
  "not observed at runtime".

Per-step figures are the largest over the precision modes that ran. Joining findings already
joined changes nothing, so the run joins them once, before the baseline compares them: a
runtime-only finding is new or existing like any other.
"""

from __future__ import annotations

import linecache
import os
from collections import defaultdict
from dataclasses import replace

from verifier.dynamic.results import DynamicResult
from verifier.findings import Category, Finding, Heat, Severity

RUNTIME_CODE = "VP290"
RUNTIME_NAME = "runtime-sync"
NOT_OBSERVED = "not observed at runtime: the line did not run in the measured step"
# What a runtime-only finding is, for outputs that describe each kind of finding (SARIF's rules).
RUNTIME_SUMMARY = (
    "A line of the measured entry that made the host wait for the device at least once per step, "
    "where no static rule reports anything (runtime evidence from `--dynamic --entry`)."
)
RUNTIME_WHY = (
    "The sync counter saw the wait happen: the host stalls until the device queue drains, every "
    "step, through a path the static rules cannot follow (a method looked up by name, a library call)."
)
RUNTIME_FIX = (
    "keep the value on the device (accumulate, compare and branch with tensor ops) and read it back "
    "every N steps, or move the read out of the step"
)


def counts_runtime_syncs(dynamic: DynamicResult | None) -> bool:
    """The harness measured the user's entry and counted its syncs: runtime evidence exists."""
    return dynamic is not None and dynamic.role == "measured" and not dynamic.failure and bool(dynamic.method.sync_steps)


def join_runtime_evidence(findings: list[Finding], dynamic: DynamicResult | None) -> list[Finding]:
    if not counts_runtime_syncs(dynamic):
        return list(findings)
    syncs = _syncs_per_step(dynamic)
    executed = _executed(dynamic)
    joined, confirmed = [], set()
    for finding in findings:
        path = os.path.realpath(finding.path)
        if finding.code == RUNTIME_CODE:  # joined before: it stands for its line already
            confirmed.add((path, finding.line))
            joined.append(finding)
            continue
        lines = range(finding.line, max(finding.line, finding.end_line) + 1)
        here = [(path, line) for line in lines if (path, line) in syncs]
        if here:
            confirmed.update(here)
            per_step = sum(syncs[key][0] for key in here)
            joined.append(replace(finding, runtime=f"confirmed at runtime: {_count(per_step)} syncs per step"))
        elif finding.heat is Heat.STEP and path in executed and not executed[path].intersection(lines):
            joined.append(replace(finding, runtime=NOT_OBSERVED))
        else:
            joined.append(finding)
    for (path, line), (per_step, kinds, shown) in sorted(syncs.items()):
        if (path, line) not in confirmed and per_step >= 1:
            joined.append(_runtime_only(shown, path, line, per_step, kinds))
    return joined


def _syncs_per_step(dynamic: DynamicResult) -> dict[tuple[str, int], tuple[float, str, str]]:
    """(real path, line) -> (user syncs per step, kinds, path as reported), max over modes."""
    steps = dynamic.method.sync_steps
    best: dict[tuple[str, int], tuple[float, str, str]] = {}
    for mode in dynamic.modes:
        totals: dict[tuple[str, int], int] = defaultdict(int)
        kinds: dict[tuple[str, int], set[str]] = defaultdict(set)
        shown: dict[tuple[str, int], str] = {}
        for site in mode.sync_sites:
            path, _, line = site.location.rpartition(":")
            if not line.isdigit() or not os.path.isfile(path):
                continue
            key = (os.path.realpath(path), int(line))
            totals[key] += site.count
            kinds[key].add(site.kind)
            shown[key] = path
        for key, total in totals.items():
            if key not in best or total / steps > best[key][0]:
                best[key] = (total / steps, ", ".join(sorted(kinds[key])), shown[key])
    return best


def _executed(dynamic: DynamicResult) -> dict[str, set[int]]:
    """Lines of user files that ran in the measured (sync-counting) steps of any mode."""
    ran: dict[str, set[int]] = defaultdict(set)
    for mode in dynamic.modes:
        for path, lines in (mode.executed_lines or {}).items():
            ran[os.path.realpath(path)].update(lines)
    return ran


def _runtime_only(shown: str, path: str, line: int, per_step: float, kinds: str) -> Finding:
    text = linecache.getline(path, line).rstrip("\n")
    return Finding(
        path=os.path.relpath(path) if not os.path.relpath(path).startswith("..") else shown,
        line=line,
        column=len(text) - len(text.lstrip()) + 1,
        code=RUNTIME_CODE,
        name=RUNTIME_NAME,
        severity=Severity.MEDIUM,
        category=Category.SYNC,
        heat=Heat.STEP,
        message=(
            f"{_count(per_step)} host-device syncs per step measured at this line ({kinds}) that no static "
            "rule reports: the host waits for the device here every step"
        ),
        source=text,
        fix=RUNTIME_FIX,
        runtime=f"runtime-only: {_count(per_step)} syncs per step measured, no static finding at this line",
    )


def _count(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"
