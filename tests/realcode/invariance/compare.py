"""Compare the findings of a pair's two variants through its line map.

Every finding of the files the rewrite touched counts, not only the probes': a finding of the
original is kept when the rewritten files have one of the same code and severity on the line
its line maps to; the rest are lost (a finding on a line the rewrite removed is lost too), and
the rewritten files' unmatched findings are gained. A behaviour-preserving pair is invariant
when nothing is lost or gained.

A behaviour-changing pair is judged on its probes: each probe whose line had a finding of the
probe's rules must, on its new line, have none, or one that is cooler (lower heat) or milder
(lower severity) for a guard, or one at heat `once` or `epoch` and no more severe for a move
after the loop. The other findings are compared as above and reported, not judged: removing a
per-step read can legitimately change what a later read of the same value is called.
"""

from __future__ import annotations

import collections
from dataclasses import asdict, dataclass, field

from tests.realcode.inject.probes import PROBES_BY_NAME
from tests.realcode.invariance.probed import Pair

SEVERITY_ORDER = ("INFO", "LOW", "MEDIUM", "HIGH", "CRITICAL")
HEAT_ORDER = ("once", "epoch", "eval", "step")
COLD_AFTER_MOVE = ("once", "epoch")


@dataclass(frozen=True)
class Change:
    side: str                 # "lost" or "gained"
    path: str
    line: int
    code: str
    severity: str
    heat: str | None
    mapped_to: str | None     # where a lost finding's line went ("removed" when nowhere)
    message: str

    def describe(self) -> str:
        where = f"{self.path}:{self.line}"
        moved = f" (line now {self.mapped_to})" if self.side == "lost" and self.mapped_to else ""
        return f"{self.side} {self.code} {self.severity} {self.heat} at {where}{moved}"


@dataclass(frozen=True)
class ProbeJudgement:
    probe: str
    path: str
    line: int
    before: str | None        # "VP201 MEDIUM step", or None when the original had no finding of the probe's rules
    after: str | None         # the same on the rewritten line, None when absent
    changed: bool | None      # None when there was nothing to change


@dataclass
class Verdict:
    label: str
    repo: str
    kind: str
    preserving: bool
    note: str
    compared: int                                   # findings of the original's touched files
    kept: int
    changes: list[Change] = field(default_factory=list)
    probes: list[ProbeJudgement] = field(default_factory=list)
    elsewhere: list[Change] = field(default_factory=list)   # findings of untouched files that changed

    @property
    def holds(self) -> bool:
        """Invariant (preserving) or changed as stated (changing)."""
        if self.preserving:
            return not self.changes
        judged = [p for p in self.probes if p.changed is not None]
        return bool(judged) and all(p.changed for p in judged)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["holds"] = self.holds
        return data


def _key(finding: dict) -> tuple:
    return finding["path"], finding["line"], finding["code"], finding["severity"]


def _describe(finding: dict) -> str:
    return f"{finding['code']} {finding['severity']} {finding.get('heat')}"


def _change(side: str, finding: dict, mapped_to: str | None = None) -> Change:
    return Change(side, finding["path"], finding["line"], finding["code"], finding["severity"], finding.get("heat"),
                  mapped_to, finding.get("message", "")[:200])


def match(original: list[dict], rewritten: list[dict], line_map, excluded_original=frozenset(),
          excluded_rewritten=frozenset()) -> tuple[int, list[Change]]:
    """(findings kept, changes) between two lists of findings of the same files."""
    pool: dict[tuple, list[dict]] = collections.defaultdict(list)
    for finding in rewritten:
        if (finding["path"], finding["line"]) not in excluded_rewritten:
            pool[_key(finding)].append(finding)
    kept, changes = 0, []
    for finding in original:
        where = (finding["path"], finding["line"])
        if where in excluded_original:
            continue
        target = line_map.get(where)
        if target is None:
            changes.append(_change("lost", finding, "removed"))
            continue
        candidates = pool.get((target[0], target[1], finding["code"], finding["severity"]))
        if candidates:
            candidates.pop()
            kept += 1
        else:
            changes.append(_change("lost", finding, f"{target[0]}:{target[1]}"))
    changes += [_change("gained", f) for group in pool.values() for f in group]
    return kept, changes


def compare(pair: Pair, preserving: bool, original: list[dict], rewritten: list[dict]) -> Verdict:
    touched = set(pair.original) | set(pair.rewritten)
    before = [f for f in original if f["path"] in touched]
    after = [f for f in rewritten if f["path"] in touched]
    verdict = Verdict(pair.label, pair.repo, pair.kind, preserving, pair.note, compared=len(before), kept=0)
    if preserving:
        verdict.kept, verdict.changes = match(before, after, pair.line_map)
    else:
        probe_lines = set(pair.probe_sites)
        moved = {pair.line_map.get(site) for site in probe_lines} - {None}
        verdict.kept, verdict.changes = match(before, after, pair.line_map, probe_lines, moved)
        verdict.compared -= sum((f["path"], f["line"]) in probe_lines for f in before)
        verdict.probes = [_judge(pair, site, probe, before, after) for site, probe in sorted(pair.probe_sites.items())]
    identity = {(f["path"], f["line"]): (f["path"], f["line"]) for f in original + rewritten}
    _, verdict.elsewhere = match([f for f in original if f["path"] not in touched],
                                 [f for f in rewritten if f["path"] not in touched], identity)
    return verdict


def _judge(pair: Pair, site: tuple[str, int], probe: str, before: list[dict], after: list[dict]) -> ProbeJudgement:
    rules = PROBES_BY_NAME[probe].rules
    was = [f for f in before if (f["path"], f["line"]) == site and f["code"] in rules]
    target = pair.line_map.get(site)
    now = [f for f in after if target is not None and (f["path"], f["line"]) == target and f["code"] in rules]
    if not was:
        return ProbeJudgement(probe, site[0], site[1], None, _hottest_text(now), None)
    hot_before = _hottest(was)
    if not now:
        return ProbeJudgement(probe, site[0], site[1], _describe(hot_before), None, True)
    hot_now = _hottest(now)
    if pair.kind == "move_after_loop":
        changed = hot_now.get("heat") in COLD_AFTER_MOVE and _rank(hot_now)[1] <= _rank(hot_before)[1]
    else:
        cooler = _heat(hot_now) < _heat(hot_before)
        milder = SEVERITY_ORDER.index(hot_now["severity"]) < SEVERITY_ORDER.index(hot_before["severity"])
        changed = cooler or milder
    return ProbeJudgement(probe, site[0], site[1], _describe(hot_before), _describe(hot_now), changed)


def _heat(finding: dict) -> int:
    heat = finding.get("heat")
    return HEAT_ORDER.index(heat) if heat in HEAT_ORDER else len(HEAT_ORDER)


def _rank(finding: dict) -> tuple[int, int]:
    return _heat(finding), SEVERITY_ORDER.index(finding["severity"])


def _hottest(findings: list[dict]) -> dict:
    return max(findings, key=_rank)


def _hottest_text(findings: list[dict]) -> str | None:
    return _describe(_hottest(findings)) if findings else None
