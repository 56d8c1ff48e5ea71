"""VP201: the first host read of a step drains the device's queue; a read that follows it with
only host arithmetic or a little math on tensors in hand between them (a softmax, a comparison,
a reduction) costs a round trip, so it is LOW. A model's forward, a backward or a call the walk
cannot see into between the two reads makes the second a stall of its own again."""

from __future__ import annotations

import pytest

SELECT = ("VP201",)

LOOP = """\
import torch

def train(model, optimizer, loader):
    acc_sum, loss_sum, seen = 0.0, 0.0, 0
    for x, y in loader:
        out = model(x.cuda())
        loss = torch.nn.functional.cross_entropy(out, y.cuda())
        loss.backward()
        optimizer.step()
        acc = (out.argmax(1) == y.cuda()).float().mean().item()
{between}
        loss_sum += loss.item()
"""


def test_a_read_after_host_arithmetic_costs_a_round_trip(analyse):
    between = "        acc_sum += acc\n        seen = seen + 1"
    assert analyse(LOOP.format(between=between), select=SELECT) == [("VP201", 10, "MEDIUM"), ("VP201", 13, "LOW")]


def test_a_little_math_on_tensors_in_hand_between_the_reads_costs_a_round_trip(analyse):
    between = "        acc_sum += acc\n        probs = out.softmax(1)\n        hits.append(torch.argmax(probs, 1))"
    assert analyse(LOOP.format(between=between), select=SELECT) == [("VP201", 10, "MEDIUM"), ("VP201", 14, "LOW")]


@pytest.mark.parametrize(
    "work",
    [
        "probs = model(x.cuda()).softmax(1)",  # a forward
        "probs = torch.nn.functional.linear(out, out)",  # torch's modules
        "log(acc_sum)",  # a call not known to launch nothing
    ],
)
def test_work_between_the_reads_beyond_a_little_math_makes_the_second_a_stall_again(analyse, work):
    between = f"        acc_sum += acc\n        {work}"
    assert analyse(LOOP.format(between=between), select=SELECT) == [("VP201", 10, "MEDIUM"), ("VP201", 13, "MEDIUM")]


def test_a_round_trip_once_per_parameter_tensor_keeps_its_severity(analyse):
    # The second read follows the first with only a division queued, but it runs once per
    # parameter tensor: hundreds of round trips a step are no small cost.
    code = """\
def clip_gradients(model, clip):
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms


def train(model, optimizer, loader):
    for x, y in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
        clip_gradients(model, 3.0)
        optimizer.step()
"""
    assert analyse(code, select=SELECT) == [("VP201", 6, "MEDIUM"), ("VP201", 8, "MEDIUM")]


@pytest.mark.parametrize(
    ("opening", "read_at"),
    [
        ("if log_losses:", 12),  # a branch on a setting, its test no work
        ("with torch.no_grad():", 12),  # a `with` whose items launch nothing
        ("if acc > 0.5:\n            pass\n        else:", 14),  # the `else` of a branch
    ],
)
def test_the_look_back_goes_on_before_the_branch_or_with_the_read_opens(analyse, opening, read_at):
    # The read after the block (`loss_sum += loss.item()`) follows a compound statement, whose
    # block may queue anything: a stall of its own, as before.
    between = f"        {opening}\n            total = loss.detach().item()"
    code = LOOP.replace("def train(model, optimizer, loader):", "def train(model, optimizer, loader, log_losses):")
    assert analyse(code.format(between=between), select=SELECT) == [
        ("VP201", 10, "MEDIUM"), ("VP201", read_at, "LOW"), ("VP201", read_at + 1, "MEDIUM"),
    ]


def test_a_branch_whose_test_runs_a_model_keeps_the_read_in_it_a_stall(analyse):
    between = "        if model(x.cuda()).mean() is not None:\n            total = loss.detach().item()"
    assert analyse(LOOP.format(between=between), select=SELECT) == [
        ("VP201", 10, "MEDIUM"), ("VP201", 12, "MEDIUM"), ("VP201", 13, "MEDIUM"),
    ]
