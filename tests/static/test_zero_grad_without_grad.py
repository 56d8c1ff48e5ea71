"""`optimizer.zero_grad()` under `torch.no_grad()` prepares no update: a validation loop that
zeroes the gradients out of habit is still an evaluation loop, and what it reads is read once per
evaluation batch, not once per training step."""

from __future__ import annotations

CODE = """\
import torch

model = Net().cuda()
for epoch in range(10):
    for x, y in train_loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            optimizer.zero_grad()
            out = model(x.cuda())
            total += criterion(out, y.cuda()).item()
"""


def test_a_validation_loop_that_zeroes_gradients_is_still_an_evaluation_loop(analyse):
    assert analyse(CODE, select=("VP201",)) == [("VP201", 15, "LOW")]


def test_the_same_loop_with_gradients_on_trains(analyse):
    """Without `no_grad` nothing says the gradients it zeroes are not about to be made."""
    code = CODE.replace("    with torch.no_grad():\n", "    if True:\n")
    assert analyse(code, select=("VP201",)) == [("VP201", 15, "MEDIUM")]


def test_a_no_grad_decorator_counts_too(analyse):
    code = """\
import torch

model = Net().cuda()


@torch.no_grad()
def validate(loader):
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        total += criterion(model(x.cuda()), y.cuda()).item()
    return total


for epoch in range(10):
    for x, y in train_loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    validate(val_loader)
"""
    assert analyse(code, select=("VP201",)) == [("VP201", 11, "LOW")]
