"""A client that starts `verify-perf server` as an editor does and talks LSP to it over stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

WAIT = 60.0


class EditorSession:
    """One server process; diagnostics arrive as notifications and are kept per URI."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: dict[str, asyncio.Queue] = {}

    def queue(self, uri: str) -> asyncio.Queue:
        return self.published.setdefault(uri, asyncio.Queue())

    async def open(self, path: Path, text: str) -> list[types.Diagnostic]:
        uri = from_fs_path(str(path))
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        ))
        return await asyncio.wait_for(self.queue(uri).get(), WAIT)

    def type(self, path: Path, text: str, version: int) -> None:
        """Send the document's new text, as an editor does on each keystroke."""
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=from_fs_path(str(path)), version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))

    async def change(self, path: Path, text: str, version: int) -> list[types.Diagnostic]:
        self.type(path, text, version)
        return await self.next_published(path)

    async def next_published(self, path: Path, wait: float = WAIT) -> list[types.Diagnostic]:
        return await asyncio.wait_for(self.queue(from_fs_path(str(path))).get(), wait)

    async def actions(self, path: Path, line: int) -> list[types.CodeAction]:
        uri = from_fs_path(str(path))
        position = types.Position(line=line, character=0)
        found = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=position, end=types.Position(line=line, character=200)),
            context=types.CodeActionContext(diagnostics=[]),
        )), WAIT)
        return list(found or [])


def run_session(folder: Path, body: Callable, *arguments: str):
    """Start the server in `folder`, initialise it, run `await body(session)`, shut it down."""

    async def main():
        client = LanguageClient("verify-perf-tests", "1")
        session = EditorSession(client)

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            session.queue(params.uri).put_nowait(params.diagnostics)

        await client.start_io(sys.executable, "-m", "verifier", "server", *arguments, cwd=str(folder))
        try:
            await asyncio.wait_for(client.initialize_async(types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(folder)),
            )), WAIT)
            client.initialized(types.InitializedParams())
            return await body(session)
        finally:
            await asyncio.wait_for(client.shutdown_async(None), WAIT)
            client.exit(None)
            await client.stop()

    return asyncio.run(main())


@pytest.fixture
def session_in():
    return run_session
