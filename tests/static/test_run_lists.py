"""A run-long list handed to a helper in another module grows for the run there too (VP402)."""

from __future__ import annotations

import libcst as cst

from tests.static.test_cross_module_heat import findings, write
from verifier.static.run_lists import run_long_lists

STEP_BODY = """\
def train_step(loss, optimizer, hist):
    loss.backward()
    optimizer.step()
    hist.append(loss)
"""
TRAIN = """\
import torch
from step_body import train_step

history = []
model = Net().cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    train_step(loss, optimizer, history)
"""


def lists(code: str) -> frozenset[str]:
    return run_long_lists(cst.parse_module(code), code)


def test_module_lists_bound_once_and_never_cut_live_for_the_run():
    code = """\
kept = []
also: list = []
cleared = []
trimmed = []
rebound = []
sliced = []
made = list()
full = [1]

def reset():
    global rebound
    rebound = []

cleared.clear()
del trimmed[:10]
sliced[:] = []
"""
    assert lists(code) == {"kept", "also", "made"}


def test_a_helper_in_another_module_growing_the_list_is_reported(tmp_path):
    write(tmp_path, {"train.py": TRAIN, "step_body.py": STEP_BODY})
    assert findings(tmp_path, select=("VP402",)) == [
        ("step_body.py", "VP402", 4, "HIGH", "step"),
    ]


def test_a_list_the_callers_module_clears_is_bounded(tmp_path):
    train = TRAIN + "    if len(history) > 100:\n        history.clear()\n"
    write(tmp_path, {"train.py": train, "step_body.py": STEP_BODY})
    assert findings(tmp_path, select=("VP402",)) == []


def test_a_list_made_per_call_by_one_caller_is_not_run_long(tmp_path):
    train = TRAIN + "    train_step(loss, optimizer, [])\n"
    write(tmp_path, {"train.py": train, "step_body.py": STEP_BODY})
    assert findings(tmp_path, select=("VP402",)) == []
