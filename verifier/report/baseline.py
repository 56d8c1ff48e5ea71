"""Compare a run with a stored one (`--baseline FILE`, a previous `--format json` output).

Findings are matched by a fingerprint made of what the finding is, not where: its rule, the
function it is in, and its statement and code normalised by Python's parser (`identity`), plus
which occurrence of that same finding in its file it is. Neither the path nor a line number is
part of it, so a renamed or moved file, code inserted above a finding, and a function moved
within its file keep their findings "existing". A matched finding that is now hotter or more
severe than the stored one is "new": the change made it worse. Baselines written before this
scheme (JSON `schema_version` 1) are matched by their own fingerprints (rule, path, first line).
Measured figures are compared mode by mode, only for the same workload fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from verifier.dynamic.results import DynamicResult, ModeResult, StepTiming
from verifier.integers import json_integer, shown
from verifier.dynamic.intervals import median_interval
from verifier.findings import Finding, Heat, Severity
from verifier.report import figures
from verifier.report.identity import FILE_LEVEL_CODE, Identity, identities
from verifier.errors import UsageError
from verifier.static.source import UnreadableSource, read_bytes
from verifier.static.suppression import without_directives

NEW, EXISTING, FIXED = "new", "existing", "fixed"
# The JSON schema version from which stored fingerprints are identities (not path and line).
IDENTITY_SCHEMA = 2


def fingerprint(code: str, identity: Identity, occurrence: int) -> str:
    key = "\0".join(("identity", code, identity.scope, identity.statement, identity.code, str(occurrence)))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def fingerprints(findings: Iterable[Finding]) -> dict[Finding, str]:
    """Fingerprint of each finding; occurrences of one identity are counted per file, in order."""
    ordered = sorted(findings)
    known = identities(ordered)
    seen: Counter[tuple[str, str, Identity]] = Counter()
    result: dict[Finding, str] = {}
    for finding in ordered:
        key = (finding.path, finding.code, known[finding])
        result[finding] = fingerprint(finding.code, known[finding], seen[key])
        seen[key] += 1
    return result


def path_fingerprint(code: str, path: str, source_line: str, occurrence: int) -> str:
    """The fingerprint of schema_version 1: rule, path, first line, occurrence."""
    normalised = " ".join(source_line.split())
    key = "\0".join((code, path.replace("\\", "/"), normalised, str(occurrence)))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def path_fingerprints(findings: Iterable[Finding]) -> dict[Finding, str]:
    """Fingerprints as schema_version 1 made them, to read its baselines."""
    seen: Counter[tuple[str, str, str]] = Counter()
    result: dict[Finding, str] = {}
    for finding in sorted(findings):
        text = _first_line(finding.source)
        key = (finding.code, finding.path, " ".join(text.split()))
        result[finding] = path_fingerprint(finding.code, finding.path, text, seen[key])
        seen[key] += 1
    return result


@dataclass(frozen=True)
class StoredFinding:
    """A finding as the baseline file recorded it (enough to list it as fixed)."""

    fingerprint: str
    code: str
    name: str
    severity: str
    path: str
    line: int
    message: str
    # The first source line without suppression comments: matches a finding now suppressed there.
    source_key: str = ""
    heat: str = ""


@dataclass(frozen=True)
class Baseline:
    path: str
    findings: tuple[StoredFinding, ...]
    score: int | None
    dynamic: DynamicResult | None
    # The rules the stored run selected (None: a baseline written before runs recorded them).
    rules: frozenset[str] | None = None
    # Fingerprints of rule, path and first line (schema_version 1), not of identities.
    path_keyed: bool = False


@dataclass(frozen=True)
class Regression:
    mode: str
    metric: str
    baseline: str
    current: str
    note: str


@dataclass(frozen=True)
class BaselineComparison:
    path: str
    states: dict[Finding, str]
    fixed: tuple[StoredFinding, ...]
    regressions: tuple[Regression, ...]
    measured_note: str
    baseline_score: int | None
    # Stored findings this run could not have found again: their rule did not run on their file,
    # or their file was not analysed (another path, not changed, not analysable now).
    not_compared: tuple[StoredFinding, ...] = ()
    # False when the stored run selected other rules: its score measures something else.
    score_compared: bool = True
    # The stored fingerprints are path-keyed (schema_version 1), not identities.
    path_keyed: bool = False

    @property
    def comparable_score(self) -> int | None:
        """The baseline's score where comparing with it means something."""
        return self.baseline_score if self.score_compared else None

    @property
    def new(self) -> list[Finding]:
        return [f for f, state in sorted(self.states.items()) if state == NEW]

    @property
    def existing(self) -> list[Finding]:
        return [f for f, state in sorted(self.states.items()) if state == EXISTING]


_MAX_BASELINE_SIZE = 256 * 1024 * 1024
MAX_SAMPLES = 1_000
"""Step-time samples a stored mode may hold. A run records one per timed repeat (a few dozen at
most in practice), and comparing bootstraps them 2,000 times: 200,000 would take minutes."""


def load_baseline(path: str) -> Baseline:
    """A stored `--format json` output; anything else is a usage error naming the problem."""
    try:
        document = json.loads(read_bytes(path, _MAX_BASELINE_SIZE).decode("utf-8"), parse_int=json_integer)
    except UnreadableSource as error:
        raise UsageError(f"--baseline {path}: cannot read: {str(error).removeprefix('cannot read file: ')}") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"--baseline {path}: not UTF-8 text ({error.reason})") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"--baseline {path}: not JSON ({error}); write one with `--format json -o {path}`") from None
    except ValueError as error:  # an integer refused before conversion (`json_integer`)
        raise UsageError(f"--baseline {path}: not a verify-perf JSON report ({error})") from None
    except RecursionError:
        raise UsageError(f"--baseline {path}: not a verify-perf JSON report (values nested too deeply)") from None
    if not isinstance(document, dict) or not isinstance(document.get("findings"), list):
        raise UsageError(f"--baseline {path}: not a verify-perf JSON report (no findings list)")
    try:
        stored = _stored_findings(document["findings"])
        dynamic_block = document.get("dynamic") or {}
        result = dynamic_block.get("result") if isinstance(dynamic_block, dict) else None
        dynamic = DynamicResult.from_dict(result) if isinstance(result, dict) else None
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as error:
        raise UsageError(f"--baseline {path}: unexpected content: {type(error).__name__}: {error}") from None
    problem = _compared_figures_problem(dynamic) if dynamic is not None else None
    if problem is not None:
        raise UsageError(f"--baseline {path}: refused: {problem}")
    stored_score = document.get("score") if isinstance(document.get("score"), dict) else {}
    # The score the decision read; a baseline written before proven scores has its total only.
    score = stored_score.get("proven_total", stored_score.get("total"))
    rules = document.get("rules")
    if rules is not None and not (isinstance(rules, list) and all(isinstance(code, str) for code in rules)):
        raise UsageError(f"--baseline {path}: unexpected content: rules is not a list of rule codes")
    version = document.get("schema_version")
    return Baseline(path, stored, score if type(score) is int else None, dynamic,
                    frozenset(rules) if rules is not None else None,
                    path_keyed=not (type(version) is int and version >= IDENTITY_SCHEMA))


def _compared_figures_problem(dynamic: DynamicResult) -> str | None:
    """Why the stored figures a comparison reads cannot be compared (not numbers, or too many
    samples to compare quickly), else None."""
    for mode in dynamic.modes:
        name = shown(str(mode.mode))
        timing = mode.step_time
        if timing is not None and not isinstance(timing, StepTiming):
            return f"the step time of mode {name} is not a step-time record"
        if timing is not None and not isinstance(timing.samples_ms, (list, tuple)):
            return f"the step-time samples of mode {name} are not a list"
        if timing is not None and len(timing.samples_ms) > MAX_SAMPLES:
            return (
                f"mode {name} holds {len(timing.samples_ms):,} step-time samples, over the limit of "
                f"{MAX_SAMPLES:,} (a run records one per timed repeat)"
            )
        figures_read = (mode.peak_memory_bytes, mode.accuracy, mode.user_syncs_per_step)
        if timing is not None:
            figures_read += (timing.median_ms, timing.min_ms, timing.max_ms, *timing.samples_ms)
        if not all(value is None or _finite_number(value) for value in figures_read):
            return f"a figure of mode {name} is not a finite number"
    return None


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


_TEXT_FIELDS = ("path", "code", "source", "fingerprint", "name", "severity", "message", "heat")


def _stored_findings(records: list[dict[str, Any]]) -> tuple[StoredFinding, ...]:
    for record in records:
        if not isinstance(record, dict):
            raise TypeError(f"a finding is {type(record).__name__}, not an object")
        wrong = [name for name in _TEXT_FIELDS if name in record and not isinstance(record[name], str)]
        if wrong or type(record.get("line")) is not int or type(record.get("column", 0)) is not int:
            raise TypeError(f"finding fields of the wrong type: {', '.join(wrong) or 'line/column'}")
    seen: Counter[tuple[str, str, str]] = Counter()
    stored = []
    # The order live findings have: a notebook's cells in order, then lines within a cell.
    for record in sorted(records, key=lambda r: (r["path"], r.get("cell") or 0, r["line"], r.get("column", 0), r["code"])):
        text = _first_line(record.get("source", ""))
        key = (record["code"], record["path"], " ".join(text.split()))
        computed = path_fingerprint(record["code"], record["path"], text, seen[key])
        seen[key] += 1
        stored.append(
            StoredFinding(
                fingerprint=record.get("fingerprint") or computed,
                code=record["code"],
                name=record.get("name", ""),
                severity=record.get("severity", ""),
                path=record["path"],
                line=int(record["line"]),
                message=record.get("message", ""),
                source_key=without_directives(text),
                heat=record.get("heat", ""),
            )
        )
    return tuple(stored)


def compare(
    findings: list[Finding],
    baseline: Baseline,
    dynamic: DynamicResult | None,
    *,
    tolerance: float,
    max_accuracy_drop: float,
    reported: Iterable[Finding] | None = None,
    suppressed: Iterable[Finding] = (),
    ran: Callable[[str, str], bool] | None = None,
    rules: Iterable[str] | None = None,
) -> BaselineComparison:
    """New/existing for the `reported` findings (default: all of `findings`); fixed for the stored
    findings that this run judged and did not find again.

    `findings` are every current finding of the analysed files, on every line, so that repeated
    identical lines are counted as the baseline counted them. `ran(path, code)` says whether rule
    `code` ran on file `path` in this run; a stored finding it did not is not compared, never
    "fixed". A stored finding whose line now carries a suppression comment is silenced, not fixed.
    The stored score is compared only when both runs selected the same `rules`.
    """
    current = path_fingerprints(findings) if baseline.path_keyed else fingerprints(findings)
    shown = set(current) if reported is None else set(reported)
    matched = _matches(current, baseline.findings)
    states = {
        f: _state(f, baseline.findings[matched[f]] if f in matched else None) for f in current if f in shown
    }
    taken = set(matched.values())
    silenced = {(f.code, f.path, without_directives(_first_line(f.source))) for f in suppressed}
    left = [s for i, s in enumerate(baseline.findings) if i not in taken]
    judged = [s for s in left if ran is None or ran(s.path, s.code)]
    not_compared = tuple(s for s in left if ran is not None and not ran(s.path, s.code))
    fixed = tuple(s for s in judged if (s.code, s.path, s.source_key) not in silenced)
    regressions, note = _measured_regressions(baseline.dynamic, dynamic, tolerance, max_accuracy_drop)
    same_rules = rules is None or baseline.rules is None or baseline.rules == frozenset(rules)
    return BaselineComparison(
        baseline.path, states, fixed, regressions, note, baseline.score, not_compared, score_compared=same_rules,
        path_keyed=baseline.path_keyed,
    )


def _matches(current: dict[Finding, str], stored: tuple[StoredFinding, ...]) -> dict[Finding, int]:
    """Each current finding paired with at most one stored finding of the same fingerprint (its
    index), the same path first: identical code in two files is two findings, and a file that
    was renamed or moved still pairs its findings. A file that could not be analysed (VP900)
    pairs only with its own path: another file's failure says nothing about it."""
    waiting: dict[str, list[int]] = defaultdict(list)
    for index, record in enumerate(stored):
        waiting[record.fingerprint].append(index)
    pairs: dict[Finding, int] = {}
    for same_path in (True, False):
        for finding, key in sorted(current.items()):
            candidates = waiting.get(key)
            if finding in pairs or not candidates:
                continue
            chosen = next((i for i in candidates if _same_path(stored[i].path, finding.path)), None)
            if chosen is None and not same_path and finding.code != FILE_LEVEL_CODE:
                chosen = candidates[0]
            if chosen is not None:
                candidates.remove(chosen)
                pairs[finding] = chosen
    return pairs


def _same_path(stored: str, current: str) -> bool:
    """The same file name (links not resolved: a link is a place of its own)."""
    return stored == current or os.path.abspath(stored) == os.path.abspath(current)


def _state(finding: Finding, stored: StoredFinding | None) -> str:
    """New when the baseline did not have it, or had it colder or less severe: the change made it worse."""
    if stored is None:
        return NEW
    before_severity = _parsed(Severity, stored.severity)
    before_heat = _parsed(Heat, stored.heat)
    if before_severity is not None and finding.severity > before_severity:
        return NEW
    if before_heat is not None and finding.heat > before_heat:
        return NEW
    return EXISTING


def _parsed(kind, name: str):
    """A stored severity or heat name, None when absent or unknown (then it cannot be compared)."""
    return kind.__members__.get(name.strip().upper()) if name else None


def _measured_regressions(
    before: DynamicResult | None, after: DynamicResult | None, tolerance: float, max_accuracy_drop: float
) -> tuple[tuple[Regression, ...], str]:
    if before is None or after is None:
        missing = "the baseline" if before is None else "this run"
        return (), f"measured figures not compared: {missing} has no dynamic results"
    differences = [
        f"{key} {old!r} -> {new!r}"
        for key, old in before.fingerprint.items()
        if (new := after.fingerprint[key]) != old
    ]
    if differences:
        return (), f"measured figures not compared: a different workload fingerprint ({'; '.join(differences)})"
    regressions: list[Regression] = []
    for mode in after.modes:
        old = before.mode(mode.mode)
        if old is None or not old.ok or not mode.ok:
            continue
        regressions += _mode_regressions(old, mode, tolerance, max_accuracy_drop)
    limit = figures.percent(tolerance)
    return tuple(regressions), (
        f"compared on the same workload fingerprint (device, torch, workload, compile, steps, threads, "
        f"accuracy steps and seeds); "
        f"slower by more than {limit} and outside both runs' 95% intervals of the median step time, larger "
        f"by more than {limit}, accuracy lower by more than {figures.decimal(max_accuracy_drop)}, or more user "
        "syncs per step count as regressions"
    )


def _mode_regressions(old: ModeResult, new: ModeResult, tolerance: float, max_accuracy_drop: float) -> list[Regression]:
    found = []
    old_time = old.step_time.median_ms if old.step_time else None
    new_time = new.step_time.median_ms if new.step_time else None
    if old_time and new_time and new_time > old_time * (1 + tolerance) and _apart(old.step_time, new.step_time):
        found.append(Regression(new.mode, "step time (median)", figures.milliseconds(old_time),
                                figures.milliseconds(new_time), f"{new_time / old_time:.2f}x slower"))
    if old.peak_memory_bytes and new.peak_memory_bytes and new.peak_memory_bytes > old.peak_memory_bytes * (1 + tolerance):
        found.append(Regression(new.mode, "peak memory", figures.mebibytes(old.peak_memory_bytes),
                                figures.mebibytes(new.peak_memory_bytes),
                                f"{new.peak_memory_bytes / old.peak_memory_bytes:.2f}x larger"))
    if old.accuracy is not None and new.accuracy is not None and old.accuracy - new.accuracy > max_accuracy_drop:
        found.append(Regression(new.mode, "accuracy", figures.decimal(old.accuracy), figures.decimal(new.accuracy),
                                f"{old.accuracy - new.accuracy:.4f} lower"))
    if (old.user_syncs_per_step is not None and new.user_syncs_per_step is not None
            and new.user_syncs_per_step > old.user_syncs_per_step):
        found.append(Regression(new.mode, "user host syncs per step", figures.decimal(old.user_syncs_per_step, 2),
                                figures.decimal(new.user_syncs_per_step, 2), "more syncs per step"))
    return found


def _apart(old: StepTiming, new: StepTiming) -> bool:
    """The new median interval lies wholly above the old one (min..max when under 2 samples)."""
    old_range = median_interval(old.samples_ms) or (old.min_ms, old.max_ms)
    new_range = median_interval(new.samples_ms) or (new.min_ms, new.max_ms)
    return new_range[0] > old_range[1]


def _first_line(source: str) -> str:
    return source.splitlines()[0] if source else ""
