"""Line and column of every node of a module, from one code generation pass.

libcst's `PositionProvider` records them while it prints the tree back; two of its costs are
ours to avoid: `MetadataWrapper.resolve` first runs a batched visit of the whole tree for the
(here, no) batchable providers, and each syntactic position goes through a generator-based
context manager and each printed token through a regex split. The same recording is done with
a plain context manager and a newline test first; only positions' bookkeeping differs, never
their values. Through the wrapper only if libcst ever changes these internals.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

try:
    from libcst._position import CodePosition, CodeRange
    from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
except ImportError:  # another libcst layout: the wrapper below still works
    PositionProvidingCodegenState = None


def positions(module: cst.Module) -> Mapping[cst.CSTNode, object]:
    provider = PositionProvider()
    if PositionProvidingCodegenState is not None:
        try:
            state = _State(default_indent=module.default_indent, default_newline=module.default_newline, provider=provider)
            module._codegen(state)
            return provider._computed
        except AttributeError:
            pass
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


class _Syntactic:
    """`PositionProvidingCodegenState.record_syntactic_position`, without a generator."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = CodePosition(self.state.line, self.state.column)

    def __exit__(self, *exc) -> None:
        state = self.state
        computed = state.provider._computed
        start = computed[self.start_node].start if self.start_node is not None else self.start
        end = computed[self.end_node].end if self.end_node is not None else CodePosition(state.line, state.column)
        computed[self.node] = CodeRange(start, end)


if PositionProvidingCodegenState is not None:

    class _State(PositionProvidingCodegenState):
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            return _Syntactic(self, node, start_node, end_node)

        def _update_position(self, value: str) -> None:
            if "\n" not in value and "\r" not in value:
                self.column += len(value)
                return
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
