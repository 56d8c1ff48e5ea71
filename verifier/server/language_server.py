"""The pygls server: diagnostics on open, save and (once typing pauses) change; fixes as code actions.

Each analysis result is kept per document with the text it was computed from, so a code action
answers from it without analysing again, and only while the document still holds that text
(a fix computed for older text is never offered). An analysis that fails shows one message and
leaves the document's diagnostics empty; it never stops the server.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from verifier import __version__
from verifier.findings import Finding
from verifier.server.analysis import analyse_document
from verifier.server.protocol import code_action, diagnostic

NAME = "verify-perf"
# Seconds without a change before an edited document is analysed again.
TYPING_PAUSE = 0.3


@dataclass
class _Analysed:
    version: int | None
    text: str
    findings: list[Finding]
    diagnostics: list[types.Diagnostic]


class VerifyPerfServer(LanguageServer):
    """A language server with one analysis result per open Python document."""

    def __init__(self, arguments_for: Callable[[str], argparse.Namespace]) -> None:
        super().__init__(NAME, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        # The check command line for one document's path (`verify-perf PATH --no-report ...`).
        self.arguments_for = arguments_for
        self.results: dict[str, _Analysed] = {}
        self._waiting: dict[str, asyncio.TimerHandle] = {}

    @property
    def encoding(self) -> str:
        return self.workspace.position_encoding or types.PositionEncodingKind.Utf16

    def refresh(self, uri: str) -> None:
        """Analyse the document as it now reads and publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri)
        if path is None or not path.endswith(".py"):
            return
        text = document.source
        try:
            findings = analyse_document(self.arguments_for(path), text)
        except Exception as error:  # a bug in verify-perf: said once, the server goes on
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"verify-perf could not analyse {path}: {type(error).__name__}: {error}",
            ))
            findings = []
        lines = text.splitlines()
        shown = [diagnostic(f, uri, lines, self.encoding) for f in findings]
        self.results[uri] = _Analysed(document.version, text, findings, shown)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=shown, version=document.version)
        )

    def refresh_soon(self, uri: str) -> None:
        """Analyse once typing pauses: each change restarts the wait, so a burst of keystrokes
        costs one analysis of the text it leaves."""
        waiting = self._waiting.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self._waiting[uri] = asyncio.get_running_loop().call_later(TYPING_PAUSE, self._refresh_waited, uri)

    def _refresh_waited(self, uri: str) -> None:
        self._waiting.pop(uri, None)
        if uri in self.workspace.text_documents:
            self.refresh(uri)

    def forget(self, uri: str) -> None:
        waiting = self._waiting.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.results.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def actions(self, uri: str, wanted: types.Range) -> list[types.CodeAction]:
        """The fixes of the findings that touch `wanted`, if the document still reads as analysed."""
        analysed = self.results.get(uri)
        if analysed is None or self.workspace.get_text_document(uri).source != analysed.text:
            return []
        lines = analysed.text.splitlines()
        found = []
        for finding, shown in zip(analysed.findings, analysed.diagnostics):
            if _overlaps(shown.range, wanted):
                action = code_action(finding, uri, lines, self.encoding, shown)
                if action is not None:
                    found.append(action)
        return found


def _overlaps(one: types.Range, other: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(one.start) <= key(other.end) and key(other.start) <= key(one.end)


def build_server(arguments_for: Callable[[str], argparse.Namespace]) -> VerifyPerfServer:
    server = VerifyPerfServer(arguments_for)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: VerifyPerfServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: VerifyPerfServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.refresh_soon(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: VerifyPerfServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: VerifyPerfServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
    )
    def code_actions(ls: VerifyPerfServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.actions(params.text_document.uri, params.range)

    return server


class _OneLine(logging.Formatter):
    """A message per line, never a traceback: a malformed message from the client is reported to
    it (`window/showMessage`) and logged as one line; the server goes on."""

    def formatException(self, exc_info) -> str:
        return ""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_text = ""
        return super().format(record).rstrip()


def serve(arguments_for: Callable[[str], argparse.Namespace]) -> int:
    """Serve over standard input and output until the client says exit; logs go to stderr.

    The protocol keeps standard output to itself: it gets its own copy of the descriptor, and
    descriptor 1 (which worker processes inherit) and `sys.stdout` then point at standard
    error, so nothing printed anywhere can corrupt a message."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("verify-perf server: %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.WARNING)
    sys.stdout.flush()
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    build_server(arguments_for).start_io(sys.stdin.buffer, channel)
    return 0
