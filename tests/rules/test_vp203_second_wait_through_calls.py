"""A synchronize in a helper is judged by the loop that calls it, as one in the loop itself: when
that loop's iteration already reads the device (`loss.item()`), the helper's wait is a second
one (LOW, the cost premise says where the first is); when it reads nothing, the helper stalls a
queue full of the step's work (HIGH). The loop's read may sit before or after the call, or in a
loop nested in its body; a read of a tensor shown in host memory waits for nothing."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.findings import Premise
from verifier.static.runner import analyze_paths

SELECT = ("VP203",)

HELPER = """\
import torch


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
"""

LOOP = """\
import torch
from helpers import sync


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
{body}
"""


def _findings(tmp_path, body: str):
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    (tmp_path / "train.py").write_text(LOOP.format(body=textwrap.indent(textwrap.dedent(body), " " * 8)), encoding="utf-8")
    result = analyze_paths([str(tmp_path)], Settings(select=SELECT, cache_dir=None))
    return result.findings


@pytest.mark.parametrize(
    "body",
    [
        "print(loss.item())\nsync()",
        "sync()\nlosses = loss.tolist()",
        "for _ in range(2):\n    print(loss.item())\nsync()",
    ],
    ids=["read-before", "read-after", "read-in-a-nested-loop"],
)
def test_a_helpers_synchronize_in_an_iteration_that_already_reads_is_a_second_wait(tmp_path, body):
    findings = _findings(tmp_path, body)
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in findings] == [("helpers.py", 6, "LOW")]
    cost = next(e for e in findings[0].evidence if e.premise is Premise.COST)
    assert cost.text.startswith("a second wait: the iteration of ") and "already waits for the device at `" in cost.text
    assert findings[0].heat_trace[0].waits != ""


@pytest.mark.parametrize(
    "body",
    ["sync()", "counts = torch.zeros(3)\nsync()\nprint(counts.tolist())"],
    ids=["no-read", "read-of-a-host-tensor"],
)
def test_a_helpers_synchronize_in_an_iteration_that_reads_nothing_stalls_every_step(tmp_path, body):
    findings = _findings(tmp_path, body)
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in findings] == [("helpers.py", 6, "HIGH")]
    assert all(step.waits == "" for step in findings[0].heat_trace)
