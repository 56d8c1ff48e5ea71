"""A tensor every caller hands a helper is a tensor in the helper (and on the accelerator when
the callers show it): `float(loss)` in `log_loss(loss)` is a read like `loss.item()`."""

from __future__ import annotations

import pytest

SELECT = ("VP201",)

STEP = """\
import torch

def log_loss(loss):
    value = float(loss)
    return value

device = "cuda"
model.to(device)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    optimizer.step()
    log_loss(loss)
{elsewhere}
"""


@pytest.mark.parametrize(
    ("elsewhere", "expected"),
    [
        ("", [("VP201", 4, "MEDIUM")]),
        # One caller hands a number: `loss` is not known to be a tensor, and `float()` of a number is no read.
        ("log_loss(0.5)", []),
    ],
    ids=["every-caller-hands-a-device-tensor", "a-caller-hands-a-number"],
)
def test_a_helper_reads_what_its_callers_hand_it(analyse, elsewhere, expected):
    assert analyse(STEP.format(elsewhere=elsewhere), select=SELECT) == expected
