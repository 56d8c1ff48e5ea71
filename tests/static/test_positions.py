"""The positions the engine reports findings at are libcst's own, node for node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from verifier.static.positions import positions
from verifier.static.walk import iter_descendants

REPOSITORY = Path(__file__).resolve().parents[2]
TRICKY = '''\
import torch  # a comment
x = (1 +
     2); y = [a for a in
  range(3)]
\r
@torch.no_grad()
# between
def f(a, /, b=1, *c, d, **e) -> "int":
    """doc
    string"""
    if (t := a) > 1: return t
    s = f"{a!r:>{b}} {{x}}"
    return lambda q: (yield)
'''


@pytest.mark.parametrize(
    "path", [*sorted((REPOSITORY / "examples").glob("*.py")), REPOSITORY / "verifier" / "static" / "heat.py"], ids=str
)
def test_every_node_where_libcst_puts_it(path):
    _same_as_libcst(cst.parse_module(path.read_text(encoding="utf-8")))


def test_every_node_where_libcst_puts_it_in_odd_layouts():
    _same_as_libcst(cst.parse_module(TRICKY))


def _same_as_libcst(module: cst.Module) -> None:
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    ours = positions(module)
    nodes = [module, *iter_descendants(module)]
    assert len(nodes) > 20
    for node in nodes:
        if node in expected:
            assert ours[node] == expected[node], node
    assert len(ours) == len(expected)
    assert cst.Name("elsewhere") not in ours
