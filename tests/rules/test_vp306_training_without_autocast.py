"""VP306: which loops are training loops, and which modules have already chosen their precision."""

from __future__ import annotations

import pytest

TRAIN = """\
import torch

def step_fn(batch):
    loss = model(batch.to("cuda")).mean()
    loss.backward()

def run_step(batch):
    step_fn(batch)

for batch in loader:
    run_step(batch)
"""


def test_backward_reached_through_helpers_marks_the_calling_loop(analyse):
    assert analyse(TRAIN, select=("VP306",)) == [("VP306", 10, "INFO")]


@pytest.mark.parametrize(
    "mention",
    ["scaler = torch.amp.GradScaler('cuda')", "model = model.to(torch.bfloat16)", "model.half()", "x = torch.float16"],
)
def test_a_module_that_chose_its_precision_is_left_alone(analyse, mention):
    assert analyse(TRAIN + mention + "\n", select=("VP306",)) == []


def test_a_module_without_torch_is_not_pytorch_training(analyse):
    code = "class Pen:\n    def draw(self):\n        for i in range(5):\n            self.forward(10)\n            self.backward(10)\n"
    assert analyse(code, select=("VP306",)) == []


def test_one_finding_per_training_loop_not_per_backward(analyse):
    code = """\
    import torch
    device = "cuda"
    for epoch in range(3):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            model(x).sum().backward()
            criterion(model(y), y).backward()
            optimizer.step()
    for x in other_loader:
        model(x.to(device)).sum().backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP306",)) == [("VP306", 4, "INFO"), ("VP306", 9, "INFO")]
