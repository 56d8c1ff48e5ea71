"""Suppression comments for a gate: `# verify-perf: ignore[VP201]`, `# noqa: VP201` (or a rule's
name) on a finding's line, and `# verify-perf: noqa: VP201` anywhere for the whole file.

A suppression must name the rule it silences. A blanket `# noqa` belongs to every linter a team
runs, so it never silences a finding of ours: on a line with one it is VP901, and the finding
stays. With `require-suppression-reason`, a suppression silences only when a reason follows its
codes (`# noqa: VP201 -- read once per log interval`). Suppressions are audited like the code
they silence (ruff's RUF100): a code that names no rule, a bare directive of ours and a missing
reason are VP901, a suppression that silenced nothing is VP902, so a gate cannot be quietened
without a trace. Only what is ours is judged: `# noqa: E501` and a bare `# noqa` with no finding
on its line belong to other linters; a code is ours when it starts with `VP` or names one of our
rules.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from verifier.findings import Category, Finding, Heat, Severity
from verifier.static.comments import comments
from verifier.static.source import with_newlines

# A code or a rule name: single hyphens between words, so `VP201 -- why` ends the list at `--`.
_CODES = r"[A-Za-z]\w*(?:-\w+)*(?:[\s,]+[A-Za-z]\w*(?:-\w+)*)*"
_DIRECTIVE = re.compile(
    r"#\s*(?:(?P<ours>verify-perf\s*:\s*ignore)(?:\[(?P<bracket>[^\]]*)\])?"
    rf"|(?P<file>verify-perf\s*:\s*noqa)(?:\s*:\s*(?P<file_codes>{_CODES}))?"
    rf"|noqa(?::\s*(?P<noqa>{_CODES}))?)"
    r"(?P<reason>[ \t,]*--\s*[^\s#][^#]*)?",
    re.IGNORECASE,
)
_OUR_CODE = re.compile(r"VP\w*", re.IGNORECASE)
INVALID_SUPPRESSION = "VP901"
UNUSED_SUPPRESSION = "VP902"


def without_directives(line: str) -> str:
    """The line with its suppression comments taken out, whitespace collapsed."""
    return " ".join(_DIRECTIVE.sub("", line).split())


def suppressed_codes(line: str) -> set[str] | None:
    """The codes a line's directives name; an empty set is a blanket directive (which silences
    no finding of ours); None means no directive."""
    found: set[str] | None = None
    for match in _DIRECTIVE.finditer(line):
        found = (found or set()) | set(_entries(match))
    return found


@dataclass
class Directive:
    """One suppression comment and which of its entries silenced something."""

    line: int
    column: int  # 1-based column of its `#`
    end_column: int
    ours: bool  # `verify-perf: ignore` or `verify-perf: noqa`, not the shared `noqa`
    entries: tuple[str, ...]  # as written, upper-cased; empty: a blanket directive
    whole_file: bool = False  # the file-level form (`verify-perf: noqa: VP201`): every line of the file
    reason: bool = False  # a reason follows the codes (`-- why`)
    used: set[str] = field(default_factory=set)  # entries that silenced a finding
    # Entries that named a finding but could not silence it: no reason where one is required.
    unreasoned: set[str] = field(default_factory=set)
    # Codes of findings on a line whose blanket noqa silenced none of them.
    passed_over: set[str] = field(default_factory=set)


class Suppressions:
    """The suppression comments of one file, consulted for every finding, then audited."""

    def __init__(self, text: str, lines: list[str], parsed: bool = False, require_reason: bool = False) -> None:
        """`parsed`: libcst accepted the text (its comments can then be found without the tokenizer);
        `require_reason`: a suppression silences only when a reason follows its codes."""
        self.lines = lines
        self.require_reason = require_reason
        self.by_line: dict[int, list[Directive]] = {}
        self.whole_file: list[Directive] = []
        for directive in _directives(text, parsed):
            if directive.whole_file:
                self.whole_file.append(directive)
            else:
                self.by_line.setdefault(directive.line, []).append(directive)
        self.suppressed: list[Finding] = []
        self._text = text
        self._moved_lines: dict[int, int] | None = None

    @property
    def present(self) -> bool:
        """The file holds at least one directive."""
        return bool(self.by_line or self.whole_file)

    def _moved(self) -> dict[int, int]:
        if self._moved_lines is None:
            self._moved_lines = comment_lines(self.lines, self._text) if self.by_line else {}
        return self._moved_lines

    def suppresses(self, finding: Finding) -> bool:
        """True (and the finding is counted) when a file-level directive, or a directive on its
        first or last line, names it; for a line inside a multi-line string or a backslash
        continuation, the line that ends it. A blanket `# noqa` there is noted, never obeyed."""
        hit = False
        first, last = finding.line, max(finding.line, finding.end_line)
        moved = self._moved()
        on_its_lines = [
            directive
            for number in {first, last, moved.get(first, first), moved.get(last, last)}
            for directive in self.by_line.get(number, ())
        ]
        for directive in [*on_its_lines, *self.whole_file]:
            for entry in directive.entries:
                if entry not in (finding.code, finding.name.upper()):
                    continue
                if self.require_reason and not directive.reason:
                    directive.unreasoned.add(entry)
                else:
                    directive.used.add(entry)
                    hit = True
        if hit:
            self.suppressed.append(finding)
        else:
            for directive in on_its_lines:
                if not directive.entries and not directive.ours:
                    directive.passed_over.add(finding.code)
        return hit

    def audit(self, path: str, rule_named: Callable[[str], str | None], active: Collection[str]) -> list[Finding]:
        """VP901 for entries naming no rule, bare directives of ours, a blanket `# noqa` that a
        finding of ours passed, and missing reasons; VP902 for entries that silenced nothing.

        `rule_named` gives the code of the rule an entry names (code or name), else None;
        `active` are the codes that ran on this file: an entry for another rule cannot be judged.
        """
        findings = []
        for directive in [d for directives in self.by_line.values() for d in directives] + self.whole_file:
            if not directive.entries:
                if directive.ours:
                    findings.append(self._finding(path, directive, INVALID_SUPPRESSION, _bare(directive)))
                elif directive.passed_over:
                    findings.append(self._finding(path, directive, INVALID_SUPPRESSION, _blanket(directive)))
                continue
            for entry in directive.entries:
                if not directive.ours and not _OUR_CODE.fullmatch(entry) and rule_named(entry) is None:
                    continue  # another linter's code in a shared `noqa`
                code = rule_named(entry)
                if code is None:
                    findings.append(self._finding(path, directive, INVALID_SUPPRESSION, _unknown(entry, rule_named)))
                elif entry in directive.unreasoned:
                    findings.append(self._finding(path, directive, INVALID_SUPPRESSION, _unreasoned(code)))
                elif code in active and entry not in directive.used:
                    where = "in this file" if directive.whole_file else "on this line"
                    findings.append(self._finding(
                        path, directive, UNUSED_SUPPRESSION, f"unused suppression: no {code} finding {where} to ignore",
                    ))
        return sorted(findings)

    def _finding(self, path: str, directive: Directive, code: str, message: str) -> Finding:
        from verifier.rules import rule_by_selector

        (rule,) = rule_by_selector(code)
        return Finding(
            path=path,
            line=directive.line,
            column=directive.column,
            code=code,
            end_line=directive.line,
            end_column=directive.end_column,
            name=rule.name,
            severity=rule.severity.at(Heat.ONCE) or Severity.LOW,
            category=Category.ANALYSIS,
            heat=Heat.ONCE,
            message=message,
            source=self.lines[directive.line - 1] if directive.line <= len(self.lines) else "",
            fix=rule.fix,
        )


def _bare(directive: Directive) -> str:
    if directive.whole_file:
        return ("`# verify-perf: noqa` names no rule: it silences nothing; name the rules it is for, "
                "e.g. `# verify-perf: noqa: VP203`")
    return ("`# verify-perf: ignore` names no rule: it silences nothing; name the rules it is for, "
            "e.g. `# verify-perf: ignore[VP203]`")


def _blanket(directive: Directive) -> str:
    codes = ", ".join(sorted(directive.passed_over))
    return (f"a blanket `# noqa` does not silence verify-perf: {codes} on this line is still reported; "
            f"name the rule to silence it (`# noqa: {codes}`)")


def _unreasoned(code: str) -> str:
    return (f"suppression without a reason: {code} is still reported (`require-suppression-reason` is on); "
            f"write why after the codes, e.g. `# noqa: {code} -- read once per log interval`")


def comment_lines(lines: list[str], text: str) -> dict[int, int]:
    """Lines that cannot carry a comment (their end is inside a string, f-strings included, or
    they continue with a backslash), each mapped to the line where that string or continuation
    ends: the place for its suppression. A line with no such place maps to itself."""
    moved: dict[int, int] = {}
    f_string_start, f_string_end = getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -1)
    open_f_strings: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(with_newlines(text)).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                moved.update((n, token.end[0]) for n in range(token.start[0], token.end[0]))
            elif token.type == f_string_start:
                open_f_strings.append(token.start[0])
            elif token.type == f_string_end and open_f_strings:
                moved.update((n, token.end[0]) for n in range(open_f_strings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    for number, line in enumerate(lines, start=1):
        if line.rstrip().endswith("\\") and number not in moved:
            moved[number] = number + 1
    for number in sorted(moved, reverse=True):
        target = moved[number]
        moved[number] = moved.get(target, target)
    for number in moved:
        if moved[number] > len(lines):
            moved[number] = number
    return moved


def mentions_a_directive(text: str) -> bool:
    """A cheap test before tokenizing: most files carry no suppression at all."""
    lowered = text.lower()
    return "noqa" in lowered or "verify-perf" in lowered


def _directives(text: str, parsed: bool) -> list[Directive]:
    if not mentions_a_directive(text):
        return []
    found = []
    for line, column, comment in comments(text, parsed):
        for match in _DIRECTIVE.finditer(comment):
            found.append(Directive(
                line=line,
                column=column + match.start() + 1,
                end_column=column + match.end() + 1,
                ours=match.group("ours") is not None or match.group("file") is not None,
                entries=_entries(match),
                whole_file=match.group("file") is not None,
                reason=match.group("reason") is not None,
            ))
    return found


def _entries(match: re.Match) -> tuple[str, ...]:
    """The codes a directive lists, upper-cased, each once, in order."""
    for group in ("bracket", "file_codes", "noqa"):
        if match.group(group) is not None:
            listed = match.group(group)
            return tuple(dict.fromkeys(c.strip().upper() for c in re.split(r"[,\s]+", listed) if c.strip()))
    return ()


def _unknown(entry: str, rule_named: Callable[[str], str | None]) -> str:
    from verifier.rules import all_rules

    names = [rule.code for rule in all_rules()] + [rule.name.upper() for rule in all_rules()]
    close = difflib.get_close_matches(entry, names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0] if close[0].startswith('VP') else close[0].lower()}?)" if close else ""
    return f"unknown rule `{entry}` in a suppression comment: it suppresses nothing{hint}"
