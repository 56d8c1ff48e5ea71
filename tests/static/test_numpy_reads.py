"""`.numpy()` is a host read only on the way from the device: a device tensor's `.numpy()` raises,
so code that calls it on a tensor no `.cpu()` moved runs only where the tensor lives on the host
(a CPU-only example), and `t.cpu().numpy()` waits at the `.cpu()`. `numpy(force=True)` copies
from the device itself: a read."""

from __future__ import annotations

import pytest

CODE = """\
import torch

model = Net().cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
    log({read})
"""


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        ("loss.detach().numpy()", []),
        ("loss.detach().cpu().numpy()", [("VP201", 8, "MEDIUM")]),
        ("loss.detach().numpy(force=True)", [("VP201", 8, "MEDIUM")]),
        ("loss.detach().numpy(True)", [("VP201", 8, "MEDIUM")]),
    ],
    ids=["numpy-of-a-tensor-no-copy-moved", "cpu-then-numpy", "numpy-force", "numpy-force-positional"],
)
def test_numpy_reads(analyse, read, expected):
    assert analyse(CODE.format(read=read), select=("VP201",)) == expected
