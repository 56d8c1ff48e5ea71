"""A backward in the branch a test shows runs without any scaler (`else` of `if self._scaler is not
None:`, the body of `if scaler is None:` or `if not scaler:`) never runs with the GradScaler, whatever
the other branch does (it may scale the loss in a helper the AMP rules cannot see): VP303 leaves it
alone. Without such a test, an unscaled backward beside `scaler.step` is reported."""

from __future__ import annotations

import pytest

SELECT = ("VP303",)

TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, optimizer, use_amp):
        self.model, self.optimizer = model, optimizer
        self._scaler = torch.amp.GradScaler("cuda") if use_amp else None

    def train_epoch(self, loader):
        for batch in loader:
            with torch.autocast("cuda", enabled=self._scaler is not None):
                loss = self.model(batch.cuda()).sum()
{backward}
            if self._scaler is not None:
                self._scaler.step(self.optimizer)
                self._scaler.update()
            else:
                self.optimizer.step()
"""


@pytest.mark.parametrize(
    "backward",
    [
        "            if self._scaler is not None:\n"
        "                ScaledBackward().run(self, loss)\n"
        "            else:\n"
        "                loss.backward()",
        "            if self._scaler is None:\n                loss.backward()\n"
        "            else:\n                ScaledBackward().run(self, loss)",
        "            if not self._scaler:\n                loss.backward()",
    ],
    ids=["else-of-is-not-none", "body-of-is-none", "body-of-not"],
)
def test_a_backward_where_the_test_shows_no_scaler_is_not_reported(analyse, backward):
    assert analyse(TRAINER.format(backward=backward), select=SELECT) == []


def test_an_unscaled_backward_without_such_a_test_is_reported(analyse):
    code = TRAINER.format(backward="            loss.backward()")
    assert analyse(code, select=SELECT) == [("VP303", 13, "HIGH")]
