"""The standard library's `math` works on Python floats: `math.isnan(loss)` converts a one-element
tensor with `float()` first, a host read like `float(loss)`."""

from __future__ import annotations

import pytest

CODE = """\
import math
import torch

model = Net().cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
    {line}
"""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('if math.isnan(loss):\n        raise RuntimeError("nan")', [("VP201", 9, "MEDIUM")]),
        ("history.append(math.sqrt(loss))", [("VP201", 9, "MEDIUM")]),
        # A Python number: no tensor is read.
        ("if math.isnan(lr):\n        break", []),
        # Read twice: the second read is the repeat.
        ('if math.isinf(loss):\n        print("inf", loss.item())', [("VP201", 9, "MEDIUM"), ("VP202", 10, "LOW")]),
    ],
    ids=["isnan", "sqrt", "a-number", "then-item"],
)
def test_math_functions_of_a_tensor_read_it_on_the_host(analyse, line, expected):
    assert analyse(CODE.format(line=line), select=("VP201", "VP202")) == expected
