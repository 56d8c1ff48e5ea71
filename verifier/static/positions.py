"""Line and column of every node of a module, from one code generation pass.

libcst's `PositionProvider` records them while it prints the tree back; three of its costs are
ours to avoid: `MetadataWrapper.resolve` first runs a batched visit of the whole tree for the
(here, no) batchable providers; each syntactic position goes through a generator-based context
manager and each printed token through a regex split; and every node gets three frozen
dataclasses (`CodePosition` twice, `CodeRange`) stored under its Python-level hash. The same
recording is done with a plain context manager, a newline test first, and plain tuples under
the node's id, turned into a `CodeRange` only for the nodes somebody asks about; only the
bookkeeping differs, never the values. Through the wrapper only if libcst ever changes these
internals.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

try:
    from libcst._position import CodePosition, CodeRange
    from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
except ImportError:  # another libcst layout: the wrapper below still works
    PositionProvidingCodegenState = None


def positions(module: cst.Module) -> Mapping[cst.CSTNode, object]:
    if PositionProvidingCodegenState is not None:
        try:
            state = _State(
                default_indent=module.default_indent, default_newline=module.default_newline, provider=PositionProvider()
            )
            state.spans = {}
            module._codegen(state)
            return _Spans(state.spans)
        except AttributeError:
            pass
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


class _Spans(Mapping):
    """node -> `CodeRange`, kept while the module (whose nodes' ids are the keys) lives."""

    def __init__(self, spans: dict[int, tuple[tuple[int, int], tuple[int, int]]]) -> None:
        self._spans = spans

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        start, end = self._spans[id(node)]
        return CodeRange(CodePosition(*start), CodePosition(*end))

    def __contains__(self, node: object) -> bool:
        return id(node) in self._spans

    def __len__(self) -> int:
        return len(self._spans)

    def __iter__(self) -> Iterator[cst.CSTNode]:
        raise TypeError("positions are looked up by node; they cannot be listed")


class _Syntactic:
    """`PositionProvidingCodegenState.record_syntactic_position`, without a generator."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        state = self.state
        spans = state.spans
        start = spans[id(self.start_node)][0] if self.start_node is not None else self.start
        end = spans[id(self.end_node)][1] if self.end_node is not None else (state.line, state.column)
        spans[id(self.node)] = (start, end)


if PositionProvidingCodegenState is not None:

    class _State(PositionProvidingCodegenState):
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            return _Syntactic(self, node, start_node, end_node)

        def before_codegen(self, node) -> None:
            self._stack.append((self.line, self.column))

        def after_codegen(self, node) -> None:
            start = self._stack.pop()
            key = id(node)
            if key not in self.spans:  # a syntactic position, recorded inside, stays
                self.spans[key] = (start, (self.line, self.column))

        def _update_position(self, value: str) -> None:
            if "\n" not in value and "\r" not in value:
                self.column += len(value)
                return
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
