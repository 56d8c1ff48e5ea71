"""Findings as LSP objects: diagnostics with related information, fixes as code actions.

The analysis counts columns in code points from 1; LSP counts them from 0, in UTF-16 code units
unless the client and server agreed on another encoding, so a line with non-ASCII text before a
finding still puts the squiggle under the right code.
"""

from __future__ import annotations

from collections.abc import Sequence

import os

from lsprotocol import types
from pygls.uris import from_fs_path

from verifier.findings import Edit, Finding, Severity

SOURCE = "verify-perf"
# A blocking finding is an error in the editor, a cost worth fixing a warning, the rest hints.
_SEVERITY = {
    Severity.CRITICAL: types.DiagnosticSeverity.Error,
    Severity.HIGH: types.DiagnosticSeverity.Error,
    Severity.MEDIUM: types.DiagnosticSeverity.Warning,
    Severity.LOW: types.DiagnosticSeverity.Information,
    Severity.INFO: types.DiagnosticSeverity.Hint,
}


def lsp_column(line_text: str, column: int, encoding: str = types.PositionEncodingKind.Utf16) -> int:
    """The LSP character offset of 1-based code-point `column` on `line_text`."""
    before = line_text[: max(0, column - 1)]
    if encoding == types.PositionEncodingKind.Utf32:
        return len(before)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(before.encode("utf-8", "surrogatepass"))
    return len(before.encode("utf-16-le", "surrogatepass")) // 2


def lsp_position(lines: Sequence[str], line: int, column: int, encoding: str) -> types.Position:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return types.Position(line=max(0, line - 1), character=lsp_column(text, column, encoding))


def finding_range(finding: Finding, lines: Sequence[str], encoding: str) -> types.Range:
    """Where the finding is: its node's span, or the rest of its line when no end is known."""
    start = lsp_position(lines, finding.line, finding.column, encoding)
    if finding.end_line and (finding.end_line, finding.end_column) > (finding.line, finding.column):
        end = lsp_position(lines, finding.end_line, finding.end_column, encoding)
    else:
        text = lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""
        end = types.Position(line=start.line, character=lsp_column(text, len(text) + 1, encoding))
    return types.Range(start=start, end=end)


def diagnostic(finding: Finding, uri: str, lines: Sequence[str], encoding: str) -> types.Diagnostic:
    """The finding as the editor shows it: severity, code, message with its heat, and the heat
    trace and premises as related information (each at its own file and line)."""
    heat = f" [{finding.severity.name}, {finding.heat.often}]"
    related = [
        types.DiagnosticRelatedInformation(location=_location(uri, finding.path, step.path, step.line), message=step.what)
        for step in finding.heat_trace if step.line
    ]
    related += [
        types.DiagnosticRelatedInformation(
            location=_location(uri, finding.path, premise.path or finding.path, premise.line or finding.line),
            message=f"{premise.premise.value} {premise.status.value}: {premise.text}",
        )
        for premise in finding.evidence
    ]
    return types.Diagnostic(
        range=finding_range(finding, lines, encoding),
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        source=SOURCE,
        message=finding.message + heat,
        related_information=related or None,
    )


def code_action(
    finding: Finding, uri: str, lines: Sequence[str], encoding: str, shown: types.Diagnostic | None = None
) -> types.CodeAction | None:
    """The fix a finding offers, as a quick fix editing the open document; None without one."""
    fix = finding.autofix
    if fix is None or not fix.edits:
        return None
    edits = [_text_edit(edit, lines, encoding) for edit in fix.edits]
    return types.CodeAction(
        title=f"{fix.title} ({finding.code}{'' if fix.safe else ', unsafe'})",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[shown] if shown is not None else None,
        is_preferred=fix.safe,
        edit=types.WorkspaceEdit(changes={uri: edits}),
    )


def _text_edit(edit: Edit, lines: Sequence[str], encoding: str) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(
            start=lsp_position(lines, edit.line, edit.column, encoding),
            end=lsp_position(lines, edit.end_line, edit.end_column, encoding),
        ),
        new_text=edit.replacement,
    )


def _location(uri: str, finding_path: str, path: str, line: int) -> types.Location:
    """The open document's own lines keep its URI; a step in another file gets that file's."""
    target = uri if os.path.abspath(path) == os.path.abspath(finding_path) else (from_fs_path(os.path.abspath(path)) or uri)
    position = types.Position(line=max(0, line - 1), character=0)
    return types.Location(uri=target, range=types.Range(start=position, end=position))
