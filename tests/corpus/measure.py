"""Per-rule precision and recall of the static analyzer on the annotated corpus in `samples/`.

A sample line that must produce a finding ends with `# expect: VP201[MEDIUM]` (several codes
comma-separated; the severity is optional and checked when given). Every other line must
produce no finding at all, INFO included. `# unscored: VP204` marks a real problem that the
hot-path model of RULES.md cannot see (a framework hook that nothing in the corpus calls): a
finding there is neither credited nor counted as a false alarm. The corpus is analysed, never
imported or run.

Print the table with `python -m tests.corpus.measure` (exit status 1 below the bar).
"""

from __future__ import annotations

import re
import sys
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from verifier.config import Settings
from verifier.findings import Finding, Severity
from verifier.rules import all_rules
from verifier.static.runner import analyze_paths

SAMPLES = Path(__file__).resolve().parent / "samples"
MIN_PRECISION = 0.95
MIN_RECALL = 0.90
MIN_EXPECTED_PER_RULE = 2
# A corpus of valid Python cannot exercise VP900; VP901/VP902 audit suppression comments, which
# the corpus has none of (tests/static/test_suppression.py covers them).
UNMEASURED_RULES = frozenset({"VP900", "VP901", "VP902"})

_SECTION = re.compile(r"^(expect|unscored):\s*(.*)$")
_CODE_LIST = re.compile(r"^(VP\d{3}(?:\[\w+\])?(?:\s*,\s*VP\d{3}(?:\[\w+\])?)*)(?:\s|$)")
_ITEM = re.compile(r"(VP\d{3})(?:\[(\w+)\])?")

Key = tuple[str, int, str]  # (sample path relative to SAMPLES, line, code)


class AnnotationError(ValueError):
    """A malformed annotation: a typo must fail loudly, not silently expect nothing."""


@dataclass(frozen=True)
class Expected:
    path: str
    line: int
    code: str
    severity: Severity | None

    @property
    def key(self) -> Key:
        return (self.path, self.line, self.code)


@dataclass
class Annotations:
    expected: list[Expected] = field(default_factory=list)
    unscored: set[Key] = field(default_factory=set)


def read_annotations(path: Path, name: str, known_codes: set[str]) -> Annotations:
    """The `# expect:` / `# unscored:` comments of one file, read as tokens so that a `#`
    inside a string literal is never mistaken for a comment."""
    found = Annotations()
    with tokenize.open(path) as handle:
        comments = [t for t in tokenize.generate_tokens(handle.readline) if t.type == tokenize.COMMENT]
    for comment in comments:
        line = comment.start[0]
        for section in comment.string.lstrip("#").split(";"):
            match = _SECTION.match(section.strip())
            if match is None:
                continue
            kind, rest = match.groups()
            codes = _CODE_LIST.match(rest)
            if codes is None:
                raise AnnotationError(f"{name}:{line}: `{kind}:` must be followed by codes like VP201[MEDIUM]")
            for code, severity in _ITEM.findall(codes.group(1)):
                if code not in known_codes:
                    raise AnnotationError(f"{name}:{line}: unknown rule code {code}")
                if kind == "unscored":
                    found.unscored.add((name, line, code))
                else:
                    found.expected.append(Expected(name, line, code, _severity(severity, name, line)))
    return found


def _severity(text: str, name: str, line: int) -> Severity | None:
    if not text:
        return None
    try:
        return Severity.parse(text)
    except ValueError as problem:
        raise AnnotationError(f"{name}:{line}: {problem}") from None


@dataclass
class RuleScore:
    expected: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def passes(self) -> bool:
        return self.precision >= MIN_PRECISION and self.recall >= MIN_RECALL


@dataclass(frozen=True)
class Mismatch:
    kind: str  # "miss", "false alarm" or "wrong severity"
    path: str
    line: int
    code: str
    detail: str


@dataclass
class Measurement:
    scores: dict[str, RuleScore]
    mismatches: list[Mismatch]
    internal_errors: list[str]

    def failing_rules(self) -> list[str]:
        return [code for code, score in sorted(self.scores.items()) if not score.passes]

    def thinly_covered_rules(self) -> list[str]:
        """Rules with fewer than MIN_EXPECTED_PER_RULE expected findings in the corpus."""
        codes = {rule.code for rule in all_rules()} - UNMEASURED_RULES
        return sorted(c for c in codes if self.scores.get(c, RuleScore()).expected < MIN_EXPECTED_PER_RULE)

    @property
    def passes(self) -> bool:
        return not (self.failing_rules() or self.thinly_covered_rules() or self.internal_errors)


def measure(root: Path = SAMPLES) -> Measurement:
    """Analyse `root` with every rule and score the findings against its annotations."""
    known_codes = {rule.code for rule in all_rules()}
    annotations = Annotations()
    for path in sorted(root.rglob("*.py")):
        found = read_annotations(path, path.relative_to(root).as_posix(), known_codes)
        annotations.expected += found.expected
        annotations.unscored |= found.unscored

    # The samples are training scripts that live under tests/: analysed as training code;
    # preview rules are measured too (the corpus is how they earn their way out of preview).
    result = analyze_paths([str(root)], Settings(include_tests=True, preview=True))
    reported: dict[Key, list[Finding]] = defaultdict(list)
    for finding in result.findings:
        name = Path(finding.path).resolve().relative_to(root).as_posix()
        reported[(name, finding.line, finding.code)].append(finding)

    scores: dict[str, RuleScore] = defaultdict(RuleScore)
    mismatches: list[Mismatch] = []
    for expected in annotations.expected:
        score = scores[expected.code]
        score.expected += 1
        findings = reported.get(expected.key, [])
        severities = {f.severity for f in findings}
        if not findings:
            score.fn += 1
            mismatches.append(Mismatch("miss", *expected.key, _expected_text(expected, root)))
        elif expected.severity is not None and severities != {expected.severity}:
            score.fn += 1
            score.fp += 1
            got = "/".join(sorted(s.name for s in severities))
            detail = f"expected {expected.severity.name}, got {got} ({findings[0].heat.label}): {findings[0].message}"
            mismatches.append(Mismatch("wrong severity", *expected.key, detail))
        else:
            score.tp += 1

    expected_keys = {e.key for e in annotations.expected}
    for key, findings in sorted(reported.items()):
        if key in expected_keys or key in annotations.unscored:
            continue
        scores[key[2]].fp += 1
        first = findings[0]
        detail = f"{first.severity.name} ({first.heat.label}): {first.message}"
        mismatches.append(Mismatch("false alarm", *key, detail))

    errors = [f"{r.path}: {r.internal_error}" for r in result.internal_errors]
    return Measurement(dict(scores), sorted(mismatches, key=lambda m: (m.code, m.path, m.line)), errors)


def _expected_text(expected: Expected, root: Path) -> str:
    severity = f"[{expected.severity.name}]" if expected.severity is not None else ""
    source = (root / expected.path).read_text(encoding="utf-8").splitlines()[expected.line - 1]
    return f"expected {expected.code}{severity} on: {source.split('#')[0].strip()}"


def format_report(measurement: Measurement) -> str:
    """The per-rule table, then every miss and false alarm with file:line."""
    header = f"{'rule':<7}{'expected':>9}{'tp':>5}{'fp':>5}{'fn':>5}{'precision':>11}{'recall':>8}"
    lines = [header, "-" * len(header)]
    for code, score in sorted(measurement.scores.items()):
        flag = "" if score.passes else "   <-- below the bar"
        lines.append(
            f"{code:<7}{score.expected:>9}{score.tp:>5}{score.fp:>5}{score.fn:>5}"
            f"{score.precision:>11.2f}{score.recall:>8.2f}{flag}"
        )
    total = RuleScore(*(sum(getattr(s, f) for s in measurement.scores.values()) for f in ("expected", "tp", "fp", "fn")))
    lines.append(
        f"{'all':<7}{total.expected:>9}{total.tp:>5}{total.fp:>5}{total.fn:>5}{total.precision:>11.2f}{total.recall:>8.2f}"
    )
    lines.append(f"bar: precision >= {MIN_PRECISION}, recall >= {MIN_RECALL} per rule")
    for kind, title in (("miss", "misses"), ("wrong severity", "wrong severities"), ("false alarm", "false alarms")):
        listed = [m for m in measurement.mismatches if m.kind == kind]
        if listed:
            lines += ["", f"{title}:"]
            lines += [f"  samples/{m.path}:{m.line} {m.code} {m.detail}" for m in listed]
    if thin := measurement.thinly_covered_rules():
        lines += ["", f"rules with fewer than {MIN_EXPECTED_PER_RULE} expected findings: {', '.join(thin)}"]
    if measurement.internal_errors:
        lines += ["", "internal errors:", *(f"  {e}" for e in measurement.internal_errors)]
    return "\n".join(lines)


def main() -> int:
    measurement = measure()
    print(format_report(measurement))
    return 0 if measurement.passes else 1


if __name__ == "__main__":
    sys.exit(main())
