"""What a finding is, independent of where its file lives and which line it is on.

A finding is its rule, the function it is in (`Trainer.train`, "" at module level), the statement
it is in (only the header of a compound statement: `for x in loader:`), and its own code, each
normalised by Python's own parser (`ast`), so whitespace, comments, suppression comments, quotes
and line breaks inside brackets do not change it. A renamed or moved file, code inserted above
a finding, and a function moved elsewhere in its file keep the identity; a statement moved into
another function, or a renamed function, give a new one. A file that could not be analysed
(VP900) is one finding about the whole file: its identity is the file's, so only a finding of the
same file matches it (`baseline`). This is what SARIF `partialFingerprints`
are for: the same result, tracked across runs.

Source is parsed with `ast`, never run. A file that cannot be read or parsed now falls back to
the finding's first source line.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

from verifier.findings import Finding
from verifier.static.notebook import is_notebook, read_notebook
from verifier.static.source import UnreadableSource, has_stand_in, read_bytes, read_source, split_lines
from verifier.static.suppression import without_directives

# Fields of compound statements that hold statements; a header is the statement without them.
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Identity:
    scope: str  # the enclosing functions and classes, dotted; "" at module level
    statement: str  # the statement, or a compound statement's header, as `ast.unparse` writes it
    code: str  # the finding's own span where it is an expression, normalised the same way; else ""


# A file that could not be analysed: its finding is about the file, whatever its text.
FILE_LEVEL_CODE = "VP900"
WHOLE_FILE = Identity("", "", "")


def identities(findings: Iterable[Finding]) -> dict[Finding, Identity]:
    """The identity of each finding; each file is read and parsed once."""
    result = {}
    for finding in findings:
        if finding.code == FILE_LEVEL_CODE:
            result[finding] = WHOLE_FILE
            continue
        parsed = _parsed(finding.path)
        result[finding] = _identity(finding, *parsed) if parsed is not None else _fallback(finding)
    return result


def _fallback(finding: Finding) -> Identity:
    first = finding.source.splitlines()[0] if finding.source else ""
    return Identity("", without_directives(first), "")


@functools.lru_cache(maxsize=256)
def _parsed_at(path: str, stamp: tuple) -> tuple[ast.Module, list[str]] | None:
    try:
        source = read_notebook(path)[0] if is_notebook(path) else read_source(path)
        return ast.parse(source.text), split_lines(source.text)
    except (UnreadableSource, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parsed(path: str) -> tuple[ast.Module, list[str]] | None:
    """The file's tree and lines; cached while the file is unchanged."""
    if has_stand_in(path):  # source read from standard input under this name: that text, not the disk's
        try:
            data = read_bytes(path, None)
        except UnreadableSource:
            return None
        return _parsed_at(os.path.abspath(path), ("stand-in", hashlib.sha256(data).hexdigest()))
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return _parsed_at(os.path.realpath(path), (status.st_mtime_ns, status.st_size))


def _identity(finding: Finding, tree: ast.Module, lines: list[str]) -> Identity:
    line, column = finding.line, finding.column - 1
    scope, statement = _locate(tree, lines, line, column)
    if statement is None:  # a comment line, or past the code (a directive's own line)
        text = lines[line - 1] if 1 <= line <= len(lines) else ""
        return Identity(".".join(scope), without_directives(text), "")
    return Identity(".".join(scope), _normalised_statement(statement), _normalised_span(finding, lines))


def _locate(tree: ast.Module, lines: list[str], line: int, column: int) -> tuple[list[str], ast.stmt | None]:
    """The names of the scopes around (line, column) and the innermost statement holding it."""
    scope: list[str] = []
    found: ast.stmt | None = None
    statements: list[ast.stmt] = tree.body
    while True:
        here = [s for s in statements if _first_line(s) <= line <= (s.end_lineno or s.lineno)]
        if not here:
            return scope, found
        chosen = here[0] if len(here) == 1 else _on_column(here, lines, line, column)
        if found is not None and isinstance(found, _SCOPES):
            scope.append(found.name)  # the position is inside its body
        found = chosen
        statements = [s for name in _BODIES for s in _statements_in(getattr(chosen, name, None))]


def _statements_in(value) -> list[ast.stmt]:
    if not isinstance(value, list):
        return []
    found = []
    for item in value:
        if isinstance(item, ast.stmt):
            found.append(item)
        elif isinstance(item, (ast.ExceptHandler, ast.match_case)):
            found.extend(item.body)
    return found


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", ())
    return min([statement.lineno, *(d.lineno for d in decorators)])


def _on_column(statements: list[ast.stmt], lines: list[str], line: int, column: int) -> ast.stmt:
    """Of statements sharing `line` (`a(); b()`), the last one starting at or before `column`."""
    text = lines[line - 1] if 1 <= line <= len(lines) else ""
    chosen = statements[0]
    for statement in statements:
        starts = statement.col_offset if statement.lineno == line else -1
        if starts == -1 or _characters(text, starts) <= column:
            chosen = statement
    return chosen


def _characters(text: str, byte_offset: int) -> int:
    """`ast` counts columns in UTF-8 bytes; findings count characters."""
    return len(text.encode("utf-8", "surrogatepass")[:byte_offset].decode("utf-8", "ignore"))


def _normalised_statement(statement: ast.stmt) -> str:
    header = copy.copy(statement)
    for name in _BODIES:
        if isinstance(getattr(header, name, None), list):
            setattr(header, name, [ast.Pass()] if name == "body" else [])
    try:
        return ast.unparse(header)
    except (RecursionError, ValueError, AttributeError, TypeError):
        return ast.dump(header, include_attributes=False)[:2000]


def _normalised_span(finding: Finding, lines: list[str]) -> str:
    first, last = finding.line, max(finding.line, finding.end_line)
    if not 1 <= first <= last <= len(lines):
        return ""
    span = lines[first - 1 : last]
    end = finding.end_column - 1 if finding.end_line >= finding.line and finding.end_column else None
    if end is not None:
        span[-1] = span[-1][:end]
    span[0] = span[0][finding.column - 1 :]
    text = "\n".join(span)
    try:
        return ast.unparse(ast.parse(text.strip(), mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Not an expression: the finding is a statement (a whole loop), which its header names.
        return ""
