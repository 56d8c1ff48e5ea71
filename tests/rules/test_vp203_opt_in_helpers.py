"""VP203 leaves a synchronize under an opt-in flag alone (`if args.sync_each_step:`), a choice the
user makes; a helper that only such a branch calls is the same choice, so moving the synchronize
into one, or inlining it back, changes nothing. Called on the default path, the helper's
synchronize is a per-step stall."""

from __future__ import annotations

import pytest

SELECT = ("VP203",)

TRAIN = """\
import argparse

import torch


def after_update():
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sync-each-step", action="store_true")
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        model(torch.randn(8, 4, device="cuda")).sum().backward()
        optimizer.step()
{tail}
"""


@pytest.mark.parametrize(
    "tail",
    [
        "        if args.sync_each_step:\n            after_update()",
        "        if args.sync_each_step:\n            torch.cuda.synchronize()",
    ],
)
def test_a_synchronize_only_an_opt_in_branch_reaches_is_not_reported(analyse, tail):
    assert analyse(TRAIN.format(tail=tail), select=SELECT) == []


def test_the_helper_called_on_the_default_path_stalls_every_step(analyse):
    assert analyse(TRAIN.format(tail="        after_update()"), select=SELECT) == [("VP203", 7, "HIGH")]
