"""VP202 across a call: a helper's read of a value every caller read just before the call is a
repeat (a round trip, LOW), as it is when the same two reads sit in one function."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

SELECT = ("VP201", "VP202")

STEP = """\
import torch

def log_step(loss, step):
    print(step, loss.item())

def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = model(x, y)
        loss.backward()
        optimizer.step()
{before}
        log_step(loss, step)
{elsewhere}
"""


@pytest.mark.parametrize(
    ("before", "elsewhere", "expected"),
    [
        ("        lossf = loss.item()", "", [("VP202", 4, "LOW"), ("VP201", 12, "MEDIUM")]),
        # Inline, the same two reads: the second is the repeat.
        ("        lossf = loss.item()\n        print(step, loss.item())", "", [
            ("VP202", 4, "LOW"), ("VP201", 12, "MEDIUM"), ("VP202", 13, "LOW"),
        ]),
        # Read under a branch that runs at the first step only: the helper's read is the first
        # at every other step.
        ("        if step == 0:\n            lossf = loss.item()", "", [("VP201", 4, "MEDIUM")]),
        # Bound again after the read: a new value reaches the helper.
        ("        lossf = loss.item()\n        loss = loss.detach() * 2", "", [("VP201", 4, "MEDIUM"), ("VP201", 12, "MEDIUM")]),
        # Read before the loop, called inside it: another iteration's value.
        ("", "", [("VP201", 4, "MEDIUM")]),
        # Another caller hands a value nobody read: the helper's read waits for the device there.
        ("        lossf = loss.item()", """\
def evaluate(model, loader):
    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        log_step(loss, 0)
""", [("VP201", 4, "MEDIUM"), ("VP201", 12, "MEDIUM")]),
    ],
    ids=["every-caller-read-it", "inline-twice", "read-under-a-branch", "rebound-after-the-read",
         "not-read", "one-caller-did-not-read-it"],
)
def test_a_helper_reads_again_what_its_callers_read(analyse, before, elsewhere, expected):
    assert analyse(STEP.format(before=before, elsewhere=elsewhere), select=SELECT) == expected


def test_the_repeat_is_found_in_a_helper_of_another_module(tmp_path):
    (tmp_path / "logs.py").write_text(textwrap.dedent("""\
        def log_step(loss, step):
            print(f"step {step}: {loss.item():.4f}")
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        from logs import log_step

        def train(model, loader, optimizer):
            for step, (x, y) in enumerate(loader):
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
                if float(loss) > 100.0:
                    break
                log_step(loss=loss, step=step)
    """))
    result = analyze_paths([str(tmp_path)], Settings(select=SELECT))
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings] == [
        ("logs.py", "VP202", 2, "LOW"),
        ("train.py", "VP201", 9, "MEDIUM"),
    ]
    assert "already read by every caller just before the call" in result.findings[0].message


CALLEE_READS = """\
import torch

def log_step(loss):
{callee_body}

def train_step(model, x, y, optimizer):
    loss = model(x, y)
    loss.backward()
    optimizer.step()
{step_tail}

def train(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss, value = train_step(model, x, y, optimizer)
        log_step(loss)
        print(step, loss.item())
"""


@pytest.mark.parametrize(
    ("callee_body", "step_tail", "expected"),
    [
        # The helper reads what it is passed: the caller's read after the call is the repeat.
        ("    loss.item()", "    return loss, 0.0", [("VP201", 4, "MEDIUM"), ("VP202", 17, "LOW")]),
        # The step read the loss it returns: the helper's read is a repeat of the caller's value,
        # and so is the caller's.
        ("    pass", "    value = loss.item()\n    return loss, value", [("VP201", 10, "MEDIUM"), ("VP202", 18, "LOW")]),
        # Only under a branch (here one of unknown frequency), or after a return that may come
        # first: not on every call.
        ("    if loss.requires_grad:\n        loss.item()", "    return loss, 0.0", [("VP201", 5, "LOW"), ("VP201", 18, "MEDIUM")]),
        ("    if loss is None:\n        return\n    loss.item()", "    return loss, 0.0", [("VP201", 6, "MEDIUM"), ("VP201", 19, "MEDIUM")]),
        # Bound again before the read: not the value passed in.
        ("    loss = loss * 2\n    loss.item()", "    return loss, 0.0", [("VP201", 5, "MEDIUM"), ("VP201", 18, "MEDIUM")]),
        # One `return` gives a value it had not read.
        ("    pass", "    if x is None:\n        return loss, 0.0\n    value = loss.item()\n    return loss, value",
         [("VP201", 12, "MEDIUM"), ("VP201", 20, "MEDIUM")]),
    ],
    ids=["callee-reads-its-parameter", "callee-returns-what-it-read", "read-under-a-branch",
         "read-after-an-early-return", "parameter-rebound-first", "one-return-not-read"],
)
def test_a_read_made_by_a_callee_makes_the_callers_read_a_repeat(analyse, callee_body, step_tail, expected):
    code = CALLEE_READS.format(callee_body=callee_body, step_tail=step_tail)
    assert analyse(code, select=SELECT) == expected


def test_a_helper_reading_the_scripts_global_makes_the_scripts_read_a_repeat(analyse):
    code = """\
    import torch

    model = Net().cuda()

    def log_step():
        print(f"loss {loss.item():.4f}")

    def log_other(loss):
        loss = loss * 2
        print(loss.item())

    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        optimizer.step()
        log_step()
        if loss.item() > 10:
            break
    """
    assert analyse(code, select=SELECT) == [("VP201", 6, "MEDIUM"), ("VP202", 17, "LOW")]
