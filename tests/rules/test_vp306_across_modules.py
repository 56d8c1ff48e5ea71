"""VP306 follows the backward across modules: a training loop whose backward runs in a function
of another module gets the note, unless that module chose a precision (autocast, a scaler)."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

STEP = """\
import torch

def train_step(model, x, y, optimizer):
{autocast}    loss = model(x, y)
    loss.backward()
    optimizer.step()
    return loss
"""

TRAIN = """\
import torch
from step_body import train_step

device = "cuda"
model = Net().to(device)
for x, y in loader:
    loss = train_step(model, x.to(device), y.to(device), optimizer)
"""


def notes(tmp_path, autocast=""):
    (tmp_path / "step_body.py").write_text(STEP.format(autocast=autocast))
    (tmp_path / "train.py").write_text(TRAIN)
    result = analyze_paths([str(tmp_path)], Settings(select=("VP306",)))
    return [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings]


def test_a_loop_whose_backward_is_in_another_module_is_noted(tmp_path):
    assert notes(tmp_path) == [("train.py", 6, "INFO")]


def test_a_backward_in_a_module_that_chose_a_precision_is_not(tmp_path):
    # The step's module mentions autocast: it has chosen its precision, wherever the loop is.
    assert notes(tmp_path, autocast="    # runs under torch.autocast set up by the caller's context\n    ctx = torch.autocast\n") == []


def test_the_loop_alone_calling_nothing_that_trains_is_not_noted(tmp_path):
    (tmp_path / "step_body.py").write_text(textwrap.dedent("""\
        def train_step(model, x, y, optimizer):
            return model(x, y)
    """))
    (tmp_path / "train.py").write_text(TRAIN)
    assert analyze_paths([str(tmp_path)], Settings(select=("VP306",))).findings == []
