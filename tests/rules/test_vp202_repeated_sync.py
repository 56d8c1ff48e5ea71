"""VP202: a value read on the host twice where both reads run; exclusive arms are one read."""

from __future__ import annotations

SELECT = ("VP201", "VP202")

ACCUMULATE = """\
import torch
device = "cuda"
total = None
for batch in loader:
    loss = model(batch.to(device))
    loss.backward()
    optimizer.step()
    {line}
"""


def test_the_two_arms_of_a_conditional_expression_are_one_read(analyse):
    code = ACCUMULATE.format(line="total = loss.item() if total is None else total + loss.item()")
    assert analyse(code, select=SELECT) == [("VP201", 8, "MEDIUM")]


def test_a_read_in_the_test_and_one_in_an_arm_both_run(analyse):
    code = ACCUMULATE.format(line="best = loss.item() if loss.item() < best else best")
    # The test runs first (the MEDIUM read, further right); the arm's read repeats it.
    assert analyse(code, select=SELECT) == [("VP202", 8, "LOW"), ("VP201", 8, "MEDIUM")]


def test_two_reads_in_the_same_arm_are_a_repeat(analyse):
    code = ACCUMULATE.format(line="pair = (loss.item(), loss.item()) if total is None else None")
    assert analyse(code, select=SELECT) == [("VP201", 8, "MEDIUM"), ("VP202", 8, "LOW")]
