"""VP404's premise is that the forward records a graph: a model whose parameters the function
froze before its evaluation loop, on inputs that need no gradient, records none (KAIR's test
scripts set `requires_grad = False` on every parameter after `model.eval()`)."""

from __future__ import annotations

import pytest

SELECT = ("VP404",)

LOOP = """\
import torch


def main(model, images):
    model.eval()
{freeze}
    model = model.cuda()
    for image in images:
        restored = model(torch.from_numpy(image).cuda())
        save(restored.cpu().numpy())
"""


@pytest.mark.parametrize(
    "freeze",
    [
        "    for k, v in model.named_parameters():\n        v.requires_grad = False",
        "    for p in model.parameters():\n        p.requires_grad = False",
        "    model.requires_grad_(False)",
        "    model.eval().requires_grad_(False)",
    ],
)
def test_a_model_whose_parameters_were_frozen_records_no_graph(analyse, freeze):
    assert analyse(LOOP.format(freeze=freeze), select=SELECT) == []


@pytest.mark.parametrize(
    "freeze",
    [
        "    pass",
        "    other.requires_grad_(False)",
        "    for k, v in other.named_parameters():\n        v.requires_grad = False",
    ],
)
def test_a_model_whose_parameters_still_need_gradients_is_reported(analyse, freeze):
    code = LOOP.format(freeze=freeze)
    line = code.splitlines().index("        restored = model(torch.from_numpy(image).cuda())") + 1
    assert analyse(code, select=SELECT) == [("VP404", line, "MEDIUM")]
