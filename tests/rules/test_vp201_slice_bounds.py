"""A slice bound is a Python int: `pred[:n]` with `n` a device tensor calls `n.__index__()`, a
host read per slice (speech and sequence losses slicing each sample by its length). Only a bound
shown on the device counts; an index that is a tensor (`out[idx]`) gathers on the device: no read."""

from __future__ import annotations

import pytest

CODE = """\
import torch

model = Net().cuda()
for x, y in loader:
    x = x.cuda()
    lengths = torch.randint(1, 5, (8,), device="cuda")
    out = model(x)
    loss = out.sum()
    {line}
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("for pred, n in zip(out, lengths):\n        loss = loss + pred[:n].sum()", [("VP201", 10, "MEDIUM")]),
        ("for i in range(8):\n        loss = loss + out[i, :lengths[i]].sum()", [("VP201", 10, "MEDIUM")]),
        ("loss = loss + out[lengths].sum()", []),
        ("loss = loss + out[:4].sum()", []),
        # Bounds from a tensor made on the host (no device shown): slicing by it waits for nothing.
        ("cum = torch.tensor([0, 2, 4]).cumsum(0)\n    loss = loss + out[cum[0]:cum[1]].sum()", []),
    ],
    ids=["zip-over-lengths", "indexed-length", "tensor-index-gathers", "literal-bound", "host-made-bounds"],
)
def test_a_tensor_slice_bound_is_a_host_read(analyse, line, expected):
    assert analyse(CODE.format(line=line), select=("VP201",)) == expected
