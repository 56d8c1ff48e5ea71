"""Findings turned into LSP objects: positions in the client's encoding, severities, fixes."""

from __future__ import annotations

from lsprotocol import types

from verifier.findings import Autofix, Edit, Finding, Heat, Severity
from verifier.server.protocol import code_action, diagnostic, lsp_column

UTF16, UTF8, UTF32 = types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf32


def test_columns_count_in_the_clients_encoding():
    # `π` is one UTF-16 unit and two UTF-8 bytes; `𝜋` (outside the basic plane) two UTF-16 units.
    line = 'print("π𝜋", loss.item())'
    column = line.index("loss") + 1
    assert lsp_column(line, column, UTF32) == 12
    assert lsp_column(line, column, UTF16) == 13
    assert lsp_column(line, column, UTF8) == 16


def _finding(**changes) -> Finding:
    values = dict(
        path="train.py", line=2, column=5, code="VP405", end_line=2, end_column=43, severity=Severity.LOW,
        heat=Heat.STEP, message="`zero_grad(set_to_none=False)` writes zeros",
    )
    values.update(changes)
    return Finding(**values)


LINES = ["for x in loader:", "    optimizer.zero_grad(set_to_none=False)"]


def test_a_diagnostic_spans_the_findings_node_and_says_its_severity_and_heat():
    shown = diagnostic(_finding(), "file:///p/train.py", LINES, UTF16)
    assert (shown.range.start.line, shown.range.start.character, shown.range.end.line, shown.range.end.character) == (
        1, 4, 1, 42,
    )
    assert (shown.code, shown.severity, shown.source) == ("VP405", types.DiagnosticSeverity.Information, "verify-perf")
    assert shown.message == "`zero_grad(set_to_none=False)` writes zeros [LOW, every step]"


def test_a_finding_without_an_end_marks_the_rest_of_its_line():
    shown = diagnostic(_finding(end_line=0, end_column=0), "file:///p/train.py", LINES, UTF16)
    assert (shown.range.end.line, shown.range.end.character) == (1, 42)


def test_a_blocking_finding_is_an_error_in_the_editor():
    assert diagnostic(_finding(severity=Severity.HIGH), "file:///p/train.py", LINES, UTF16).severity == (
        types.DiagnosticSeverity.Error
    )


def test_a_fix_is_a_quick_fix_that_edits_the_document_and_an_unsafe_one_is_not_preferred():
    edit = Edit("Call", 2, 5, 2, 43, "optimizer.zero_grad(set_to_none=False)", "optimizer.zero_grad()")
    finding = _finding(autofix=Autofix("Call `zero_grad()`", False, (edit,)))
    action = code_action(finding, "file:///p/train.py", LINES, UTF16)
    assert (action.title, action.kind, action.is_preferred) == (
        "Call `zero_grad()` (VP405, unsafe)", types.CodeActionKind.QuickFix, False,
    )
    [text_edit] = action.edit.changes["file:///p/train.py"]
    assert (text_edit.range.start.character, text_edit.range.end.character, text_edit.new_text) == (
        4, 42, "optimizer.zero_grad()",
    )
    assert code_action(_finding(), "file:///p/train.py", LINES, UTF16) is None
