"""Branches every caller decides (`caller_branches.py`): a test on a function's parameters that the
arguments of every call in the project answer the same way. The branch the callers never take
runs in none of the project's runs, so its findings claim no frequency (LOW, the premise unknown);
one caller that takes it, or a parameter bound again before the test, keeps them as they were."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from verifier.config import Settings
from verifier.static.caller_branches import decided
from verifier.static.runner import analyze_paths

LAYERS = """\
import torch


def squeeze(x, x_mask=None, factor=2):
    b, c, t = x.size()
    if x_mask is not None:
        x_mask = x_mask[:, :, factor - 1::factor]
    else:
        x_mask = torch.ones(b, 1, t // factor).to(device=x.device)
    return x[:, :, ::factor] * x_mask, x_mask


def scores(logits, top_k=None, verbose=False):
    if top_k is not None:
        top = torch.topk(logits, top_k)
        print(top.values.max().item())
    if verbose:
        print(logits.max().item())
    return logits.softmax(-1)
"""

TRAIN = """\
import torch

from layers import scores, squeeze


def main():
    device = torch.device("cuda")
    model = torch.nn.Conv1d(4, 4, 1).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    for step in range(1000):
        x = torch.randn(8, 4, 64, device=device)
        mask = torch.ones(8, 1, 64, device=device)
        h, m = squeeze(model(x), {mask})
        p = scores(h.mean(1){scores_args})
        loss = p.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def findings(tmp_path, mask="mask", scores_args="", layers=LAYERS):
    (tmp_path / "layers.py").write_text(layers)
    (tmp_path / "train.py").write_text(TRAIN.format(mask=mask, scores_args=scores_args))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP104", "VP201")))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings], result.findings


def test_branches_no_caller_takes_claim_no_frequency(tmp_path):
    found, every = findings(tmp_path)
    assert found == [
        ("layers.py", "VP104", 9, "LOW"),  # every call passes a mask: the `else` never runs
        ("layers.py", "VP201", 16, "LOW"),  # nobody passes `top_k`
        ("layers.py", "VP201", 18, "LOW"),  # nobody passes `verbose=True`
    ]
    frequency = [e.text for f in every for e in f.evidence if e.premise.value == "frequency"]
    assert frequency[0].startswith(
        "runs only when `not (x_mask is not None)` holds, which the defaults leave false (the configuration's, the "
        "constructor's where nothing in the project passes another value, or what every call in the project passes)"
    )
    assert frequency[1].startswith("runs only when `top_k is not None` holds")
    assert frequency[2].startswith("runs only when `verbose` holds")


def test_branches_the_callers_take_keep_their_findings(tmp_path):
    found, _ = findings(tmp_path, mask="None", scores_args=", top_k=5, verbose=True")
    assert found == [
        ("layers.py", "VP104", 9, "MEDIUM"),
        ("layers.py", "VP201", 16, "MEDIUM"),
        ("layers.py", "VP201", 18, "MEDIUM"),
    ]


def test_one_caller_that_takes_the_branch_keeps_it(tmp_path):
    layers = LAYERS + textwrap.dedent("""\


        def warm_up(device):
            for _ in range(100):
                h = torch.randn(8, 4, 64, device=device)
                squeeze(h)
                scores(h.mean(1), 3)
    """)
    found, _ = findings(tmp_path, layers=layers)
    assert found == [
        ("layers.py", "VP104", 9, "MEDIUM"),
        ("layers.py", "VP201", 16, "MEDIUM"),
        ("layers.py", "VP201", 18, "LOW"),
    ]


def test_a_parameter_bound_again_before_the_test_is_not_the_callers(tmp_path):
    layers = LAYERS.replace(
        "    b, c, t = x.size()\n    if x_mask is not None:",
        "    b, c, t = x.size()\n    x_mask = None if t % 2 else x_mask\n    if x_mask is not None:",
    )
    found, _ = findings(tmp_path, layers=layers)
    assert ("layers.py", "VP104", 10, "MEDIUM") in found


@pytest.mark.parametrize(
    ("test", "facts", "value"),
    [
        ("m is None", {"m": [("literal", "None")]}, True),
        ("m is None", {"m": [("tensor", "device")]}, False),
        ("m is not None", {"m": [("number",)]}, True),
        ("not flag", {"flag": [("literal", "False")]}, True),
        ("flag and m is None", {"flag": [("literal", "True")], "m": [("literal", "None")]}, True),
        ("flag and other", {"flag": [("literal", "False")]}, False),
        ("flag or other", {"flag": [("literal", "False")]}, None),
        ("flag or other", {"flag": [("literal", "True")]}, True),
        ("isinstance(v, torch.Tensor)", {"v": [("number",)]}, False),
        ("isinstance(v, torch.Tensor)", {"v": [("tensor",)]}, True),
        ("isinstance(v, torch.Tensor)", {"v": [("read",)]}, None),
        ("m == 3", {"m": [("number",)]}, None),
        ("m", {"m": [("tensor", "device")]}, None),
    ],
)
def test_three_valued_tests(test, facts, value):
    assert decided(cst.parse_expression(test), facts) is value
