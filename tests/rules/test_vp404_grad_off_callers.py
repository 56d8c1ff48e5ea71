"""VP404 says nothing of an evaluation loop that a call the project shows runs with autograd off:
at the call (`with torch.no_grad(): run_batches(...)`), or further out (`evaluate()` decorated
`@torch.no_grad()` calling it), in this module or another. A loop no such call reaches is still
reported, and so is one whose only callers leave autograd on."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

EVALUATION = """\
import torch


def run_batches(model, loader):
    model.eval()
    outputs = []
    for x, _ in loader:
        outputs.append(model(x.cuda()))
    return outputs


def validate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += float((model(x.cuda()).argmax(-1) == y.cuda()).sum())
    return total
"""

MAIN = """\
import torch
from evaluation import run_batches, validate

{evaluate}

def main(model, loader, optimizer):
    for epoch in range(10):
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
        evaluate(model, loader)
        validate(model, loader)


if __name__ == "__main__":
    main(None, None, None)
"""


def _findings(tmp_path, evaluate: str):
    (tmp_path / "evaluation.py").write_text(EVALUATION, encoding="utf-8")
    (tmp_path / "main.py").write_text(MAIN.format(evaluate=textwrap.dedent(evaluate)), encoding="utf-8")
    result = analyze_paths([str(tmp_path)], Settings(select=("VP404",), cache_dir=None))
    return [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings]


@pytest.mark.parametrize(
    "evaluate",
    [
        "@torch.no_grad()\ndef evaluate(model, loader):\n    return run_batches(model, loader)\n",
        "def evaluate(model, loader):\n    with torch.inference_mode():\n        return run_batches(model, loader)\n",
        # Two calls down: the decorated function calls a helper that calls the loop.
        "def _collect(model, loader):\n    return run_batches(model, loader)\n\n\n"
        "@torch.no_grad()\ndef evaluate(model, loader):\n    return _collect(model, loader)\n",
    ],
    ids=["decorated-caller", "inference-mode-at-the-call", "two-calls-down"],
)
def test_a_loop_a_grad_off_call_in_another_module_reaches_is_not_reported(tmp_path, evaluate):
    assert _findings(tmp_path, evaluate) == [("evaluation.py", 16, "MEDIUM")]


def test_a_loop_whose_callers_leave_autograd_on_is_reported(tmp_path):
    evaluate = "def evaluate(model, loader):\n    return run_batches(model, loader)\n"
    assert _findings(tmp_path, evaluate) == [("evaluation.py", 8, "MEDIUM"), ("evaluation.py", 16, "MEDIUM")]
