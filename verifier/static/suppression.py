"""Suppression comments: `# verify-perf: ignore[VP201]`, `# noqa: VP201`, or bare forms for all.

A suppression is audited like the code it silences (ruff's RUF100): a code that names no rule
(`VP2O1`) is VP901, and a suppression that silenced nothing is VP902, so a gate cannot be
quietened without a trace. Only what is ours is judged: `# noqa: E501` and a bare `# noqa`
belong to other linters too; a code is ours when it starts with `VP` or names one of our rules.
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

_DIRECTIVE = re.compile(
    r"#\s*(?:(?P<ours>verify-perf\s*:\s*ignore)(?:\[(?P<bracket>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[\w\-, ]+))?)",
    re.IGNORECASE,
)
_OUR_CODE = re.compile(r"VP\w*", re.IGNORECASE)
INVALID_SUPPRESSION = "VP901"
UNUSED_SUPPRESSION = "VP902"


def without_directives(line: str) -> str:
    """The line with its suppression comments taken out, whitespace collapsed."""
    return " ".join(_DIRECTIVE.sub("", line).split())


def suppressed_codes(line: str) -> set[str] | None:
    """The codes a line suppresses; an empty set means "everything"; None means no directive."""
    found: set[str] | None = None
    for match in _DIRECTIVE.finditer(line):
        listed = match.group("bracket") if match.group("bracket") is not None else match.group("noqa")
        codes = {c.strip().upper() for c in re.split(r"[,\s]+", listed or "") if c.strip()}
        if not codes:
            return set()
        found = (found or set()) | codes
    return found


def is_suppressed(lines: list[str], first_line: int, last_line: int, code: str, name: str) -> bool:
    """True when the first or last line of a finding carries a directive naming it (or all)."""
    for number in {first_line, last_line}:
        if not 1 <= number <= len(lines) or "#" not in lines[number - 1]:
            continue
        codes = suppressed_codes(lines[number - 1])
        if codes is not None and (not codes or code in codes or name.upper() in codes):
            return True
    return False


@dataclass
class Directive:
    """One suppression comment and which of its entries silenced something."""

    line: int
    column: int  # 1-based column of its `#`
    end_column: int
    ours: bool  # `verify-perf: ignore`, not the shared `noqa`
    entries: tuple[str, ...]  # as written, upper-cased; empty: every rule
    used: set[str] = field(default_factory=set)  # entries that silenced a finding ("" for a bare one)


class Suppressions:
    """The suppression comments of one file, consulted for every finding, then audited."""

    def __init__(self, text: str, lines: list[str], parsed: bool = False) -> None:
        """`parsed`: libcst accepted the text (its comments can then be found without the tokenizer)."""
        self.lines = lines
        self.by_line: dict[int, list[Directive]] = {}
        for directive in _directives(text, parsed):
            self.by_line.setdefault(directive.line, []).append(directive)
        self.suppressed: list[Finding] = []
        self._text = text
        self._moved_lines: dict[int, int] | None = None

    def _moved(self) -> dict[int, int]:
        if self._moved_lines is None:
            self._moved_lines = comment_lines(self.lines, self._text) if self.by_line else {}
        return self._moved_lines

    def suppresses(self, finding: Finding) -> bool:
        """True (and the finding is counted) when a directive on its first or last line names it;
        for a line inside a multi-line string or a backslash continuation, the line that ends it."""
        hit = False
        first, last = finding.line, max(finding.line, finding.end_line)
        moved = self._moved()
        for number in {first, last, moved.get(first, first), moved.get(last, last)}:
            for directive in self.by_line.get(number, ()):
                if not directive.entries:
                    directive.used.add("")
                    hit = True
                for entry in directive.entries:
                    if entry in (finding.code, finding.name.upper()):
                        directive.used.add(entry)
                        hit = True
        if hit:
            self.suppressed.append(finding)
        return hit

    def audit(
        self,
        path: str,
        rule_named: Callable[[str], str | None],
        active: Collection[str],
        every_rule_active: bool,
    ) -> list[Finding]:
        """VP901 for entries naming no rule, VP902 for entries that silenced nothing.

        `rule_named` gives the code of the rule an entry names (code or name), else None;
        `active` are the codes that ran on this file: an entry for another rule cannot be judged.
        """
        findings = []
        for directives in self.by_line.values():
            for directive in directives:
                if not directive.entries:
                    if directive.ours and every_rule_active and "" not in directive.used:
                        findings.append(self._finding(path, directive, UNUSED_SUPPRESSION,
                                                      "unused suppression: no finding on this line to ignore"))
                    continue
                for entry in directive.entries:
                    if not directive.ours and not _OUR_CODE.fullmatch(entry) and rule_named(entry) is None:
                        continue  # another linter's code in a shared `noqa`
                    code = rule_named(entry)
                    if code is None:
                        findings.append(self._finding(path, directive, INVALID_SUPPRESSION, _unknown(entry, rule_named)))
                    elif code in active and entry not in directive.used:
                        findings.append(self._finding(
                            path, directive, UNUSED_SUPPRESSION,
                            f"unused suppression: no {code} finding on this line to ignore",
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
            listed = match.group("bracket") if match.group("bracket") is not None else match.group("noqa")
            entries = tuple(dict.fromkeys(c.strip().upper() for c in re.split(r"[,\s]+", listed or "") if c.strip()))
            found.append(Directive(
                line=line,
                column=column + match.start() + 1,
                end_column=column + match.end() + 1,
                ours=match.group("ours") is not None,
                entries=entries,
            ))
    return found


def _unknown(entry: str, rule_named: Callable[[str], str | None]) -> str:
    from verifier.rules import all_rules

    names = [rule.code for rule in all_rules()] + [rule.name.upper() for rule in all_rules()]
    close = difflib.get_close_matches(entry, names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0] if close[0].startswith('VP') else close[0].lower()}?)" if close else ""
    return f"unknown rule `{entry}` in a suppression comment: it suppresses nothing{hint}"
