"""A module that defines or imports a loss scaler of its own (`class ExpLossScaler` with `scale`
and `update`, `from .fp16 import DynamicLossScaler`) may call it through a receiver named like a
GradScaler (`self.loss_scaler.update(False)`): without `GradScaler(...)` in sight, its calls are
not GradScaler's protocol, so the GradScaler rules say nothing of them."""

from __future__ import annotations

import pytest

SELECT = ("VP301", "VP302", "VP303", "VP304", "VP305")

OPTIMIZER = """\
import torch
{scaler}

class Fp16Optimizer:
    def __init__(self, params, loss_scaler=None):
        self.optimizer = torch.optim.AdamW(params)
        self.loss_scaler = loss_scaler

    def backward(self, loss):
        scaled = self.loss_scaler.scale(loss)
        scaled.backward()

    def step(self, valid):
        if not valid:
            self.loss_scaler.update(False)
            return
        self.optimizer.step()
        self.loss_scaler.update(True)
"""

OWN_CLASS = """

class ExpLossScaler:
    def __init__(self, init_scale=2 ** 16):
        self.cur_scale = init_scale

    def scale(self, loss):
        return loss * self.cur_scale

    def update(self, is_valid=True):
        self.cur_scale = self.cur_scale * 2 if is_valid else self.cur_scale / 2
"""


@pytest.mark.parametrize("scaler", [OWN_CLASS, "from .fp16 import DynamicLossScaler"])
def test_a_scaler_of_the_modules_own_is_not_taken_for_a_gradscaler(analyse, scaler):
    assert analyse(OPTIMIZER.format(scaler=scaler), select=SELECT) == []


def test_without_one_the_name_and_the_protocol_still_say_gradscaler(analyse):
    assert analyse(OPTIMIZER.format(scaler=""), select=SELECT) == [
        ("VP304", 15, "HIGH"), ("VP301", 17, "CRITICAL"), ("VP304", 18, "HIGH"),
    ]
