"""VP201: the first host read of a step drains the device's queue; a read that follows it with
only host arithmetic between them (nothing launched on the device) costs a round trip, so it is
LOW. Device work between the two reads makes the second a stall of its own again."""

from __future__ import annotations

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


def test_device_work_between_the_reads_makes_the_second_a_stall_again(analyse):
    between = "        acc_sum += acc\n        probs = out.softmax(1)"
    assert analyse(LOOP.format(between=between), select=SELECT) == [("VP201", 10, "MEDIUM"), ("VP201", 13, "MEDIUM")]


def test_a_call_between_the_reads_is_not_known_to_launch_nothing(analyse):
    between = "        acc_sum += acc\n        log(acc_sum)"
    assert analyse(LOOP.format(between=between), select=SELECT) == [("VP201", 10, "MEDIUM"), ("VP201", 13, "MEDIUM")]
