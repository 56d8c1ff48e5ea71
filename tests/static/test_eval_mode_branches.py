"""A module's evaluation-mode branch (`if not self.training:`, the `else` of `if self.training:`,
the rest of `forward` after `if self.training: return loss`) does not run in a training step: the
step runs the model in training mode. Its host reads are not per-step costs, and what it calls is
not made hot by the step; the training-mode side keeps the step's heat."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

DETECTOR = """\
import torch
import torch.nn as nn

from postprocess import suppress


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 4)

    def forward(self, images, targets=None):
        scores = self.net(images)
        {branch}


def detector_step(loader):
    model = Detector().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, targets in loader:
        images, targets = images.cuda(non_blocking=True), targets.cuda(non_blocking=True)
        loss = model(images, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

POSTPROCESS = """\
import torch


def suppress(scores):
    kept = scores[scores > 0.5]
    return kept.tolist()
"""

BRANCHES = {
    "else of if self.training": """\
if self.training:
            return (scores - targets).pow(2).mean()
        else:
            print(f"kept {scores.max().item()}")
            return suppress(scores)""",
    "if not self.training": """\
if not self.training:
            print(f"kept {scores.max().item()}")
            return suppress(scores)
        return (scores - targets).pow(2).mean()""",
    "rest after if self.training return": """\
if self.training:
            return (scores - targets).pow(2).mean()
        print(f"kept {scores.max().item()}")
        return suppress(scores)""",
    "self.training is False": """\
if self.training is False:
            print(f"kept {scores.max().item()}")
            return suppress(scores)
        return (scores - targets).pow(2).mean()""",
}


def analyse(tmp_path, files: dict[str, str]):
    for name, code in files.items():
        (tmp_path / name).write_text(textwrap.dedent(code), encoding="utf-8")
    result = analyze_paths([str(tmp_path)], Settings())
    return [(f.path.rsplit("/", 1)[-1], f.line, f.code, f.severity.name) for f in result.findings if f.code != "VP306"]


@pytest.mark.parametrize("branch", BRANCHES)
def test_the_evaluation_mode_branch_is_not_a_per_step_cost(tmp_path, branch):
    files = {"detector.py": DETECTOR.format(branch=BRANCHES[branch]), "postprocess.py": POSTPROCESS}
    assert analyse(tmp_path, files) == []


def test_the_training_mode_side_keeps_the_step_heat(tmp_path):
    branch = """\
if not self.training:
            return suppress(scores)
        print(f"loss {scores.max().item()}")
        return (scores - targets).pow(2).mean()"""
    files = {"detector.py": DETECTOR.format(branch=branch), "postprocess.py": POSTPROCESS}
    assert analyse(tmp_path, files) == [("detector.py", 16, "VP201", "MEDIUM")]


def test_a_training_mode_flag_of_something_else_is_not_a_mode_test(tmp_path):
    # `config.training` is a setting, not the module's mode: its branch runs every step when set.
    branch = """\
if config.training:
            print(f"kept {scores.max().item()}")
        return (scores - targets).pow(2).mean()"""
    source = DETECTOR.format(branch=branch).replace("import torch\n", "import torch\nconfig = object()\n", 1)
    files = {"detector.py": source, "postprocess.py": POSTPROCESS}
    assert analyse(tmp_path, files) == [("detector.py", 16, "VP201", "MEDIUM")]
