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


def test_a_module_function_named_like_an_imported_math_function_hides_it(analyse):
    # x-transformers: `from math import log` at the top, then the module's own `def log(t)` for
    # tensors; `log(-log(torch.rand_like(t)))` calls that one, which reads nothing on the host.
    code = """\
    import torch
    from math import ceil, log


    def log(t, eps=1e-20):
        return t.clamp(min=eps).log()


    model = Net().cuda()
    for x in loader:
        logits = model(x.cuda())
        loss = (logits - log(-log(torch.rand_like(logits)))).sum()
        loss.backward()
        optimizer.step()
        print(ceil(loss))
    """
    # `ceil` is still math's: reading the loss is a host read.
    assert analyse(code, select=("VP201",)) == [("VP201", 15, "MEDIUM")]
