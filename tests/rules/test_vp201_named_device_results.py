"""A name bound to a tensor method's result, called on a value shown on the accelerator, is a
device tensor (`num_pos = gt.eq(1).float().sum()` after `gt = gt.cuda()`): testing it in an `if`
reads it on the host, as testing the expression itself does. Batches of a plain loop are of
unknown kind until such a method shows what they are."""

from __future__ import annotations

import pytest

CODE = """\
import torch

for x, y in loader:
    x = x.cuda()
    y = y.cuda()
    {line}
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("num_pos = y.eq(1).float().sum()\n    if num_pos == 0:\n        continue", [("VP201", 7, "MEDIUM")]),
        ("m = y.sum()\n    if m > 0:\n        print(m)", [("VP201", 7, "MEDIUM"), ("VP201", 8, "LOW")]),
        ("k = x.any()\n    if k:\n        pass", [("VP201", 7, "MEDIUM")]),
        # The expression tested directly was found before; it still is.
        ("if y.sum() > 0:\n        pass", [("VP201", 6, "MEDIUM")]),
        # A module's `.half()` on the device is the module, not a tensor.
        ("net = x.half()\n    if net:\n        pass", []),
        # The copy to the host is the wait; the host sum tested after it is none.
        ("m = y.cpu().sum()\n    if m > 0:\n        pass", [("VP201", 6, "MEDIUM")]),
    ],
    ids=["count-of-positives", "sum-then-print", "any", "inline", "module-method", "copied-to-host"],
)
def test_a_name_bound_to_a_device_tensor_method_is_a_device_tensor(analyse, line, expected):
    assert analyse(CODE.format(line=line), select=("VP201", "VP202")) == expected


def test_a_torch_function_that_returns_a_python_value_reads_nothing(analyse):
    # x-transformers: `if not exists(v) or not is_tensor(v): continue` over a model's outputs.
    # `torch.is_tensor` answers from the type; the `.item()` after it is the step's read.
    code = """\
    import torch
    from torch import is_tensor

    model = Net().cuda()
    for x in loader:
        loss, parts = model(x.cuda())
        loss.backward()
        optimizer.step()
        for k, v in parts.items():
            if v is None or not is_tensor(v) or torch.numel(v) != 1:
                continue
            total[k] += v.item()
    """
    assert analyse(code, select=("VP201",)) == [("VP201", 12, "MEDIUM")]
