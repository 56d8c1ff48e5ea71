"""A backward on a name makes it a tensor before the backward too, unless the code checks it for a
placeholder first (`if d_loss != 0: d_loss.backward()`): the code itself says the name may hold a
plain 0 (StyleTTS2's adversarial loss is 0 on nine steps of ten), so its test is no device read."""

from __future__ import annotations

CODE = """\
import torch

model = Net().cuda()
for step, (x, y) in enumerate(loader):
    d_loss, g_loss = adversarial(model, x.cuda(), step)
    g_loss.backward()
    optimizer.step()
    if {test}:
        d_loss.backward()
        optimizer.step()
"""


def test_a_loss_checked_against_zero_is_not_a_tensor_by_its_backward_alone(analyse):
    assert analyse(CODE.format(test="d_loss != 0"), select=("VP201",)) == []


def test_checks_against_none_and_for_truth_are_placeholder_checks_too(analyse):
    assert analyse(CODE.format(test="d_loss is not None"), select=("VP201",)) == []
    assert analyse(CODE.format(test="d_loss"), select=("VP201",)) == []


def test_a_comparison_with_a_threshold_still_reads_the_tensor(analyse):
    """`if d_loss > 0.5:` is a decision on the loss's value, not a placeholder check."""
    assert analyse(CODE.format(test="d_loss > 0.5"), select=("VP201",)) == [("VP201", 8, "MEDIUM")]
