"""Trace lines from Python's own parser follow the engine's walk order (evaluation order where it
differs from source order), so the n-th call of the walk gets the n-th line here."""

from __future__ import annotations

import textwrap

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from verifier.static.trace_lines import SourceLines, source_lines
from verifier.static.walk import walk

CODE = textwrap.dedent(
    """
    @deco(a())
    def f(x=g()):
        y = [h(i)
             for i in k()]
        z = (p()
             if q()
             else r())
        match y:
            case [_] if s():
                t()
        for _ in u():
            while v(key=w(), *rest):
                pass
    """
).lstrip("\n")


def test_calls_loops_and_defs_come_in_the_walk_order():
    assert source_lines(CODE) == SourceLines(
        loops=[11, 12],
        # decorator first, then the default; a comprehension's iterable before its element; a
        # conditional's test before its branches; a case's body before its guard.
        calls=[1, 1, 2, 4, 3, 6, 5, 7, 10, 9, 11, 12, 12],
        defs=[2],
    )


def test_the_walk_meets_the_calls_and_loops_in_the_same_order_at_the_same_lines():
    module = cst.parse_module(CODE)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    seen: list[cst.CSTNode] = []
    walk(module, {cst.Call: [seen.append], cst.For: [seen.append], cst.While: [seen.append]}, {})
    calls = [positions[n].start.line for n in seen if type(n) is cst.Call]
    loops = [positions[n].start.line for n in seen if type(n) is not cst.Call]
    expected = source_lines(CODE)
    assert (calls, loops) == (expected.calls, expected.loops)
