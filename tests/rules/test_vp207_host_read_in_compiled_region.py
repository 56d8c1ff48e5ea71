"""VP207: host reads inside code that torch.compile traces (graph breaks every call)."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).parents[1] / "corpus" / "samples"


def test_compiled_patch_classifier_sample(analyse):
    code = (SAMPLES / "compiled_patch_classifier.py").read_text(encoding="utf-8")
    assert analyse(code, select=("VP207",), preview=True) == [("VP207", 20, "MEDIUM"), ("VP207", 28, "MEDIUM")]


def test_forward_of_a_module_compiled_in_place_takes_the_step_heat(analyse):
    code = """\
    import torch
    import torch.nn as nn

    class Scorer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(512, 1)

        def forward(self, features):
            scores = self.proj(features).squeeze(-1)
            top = scores.max().item()
            return scores / top

        def describe(self):
            return self.proj.weight.norm().item()

    device = torch.device("cuda")
    model = Scorer().to(device)
    model = torch.compile(model)
    for features, targets in loader:
        loss = (model(features.to(device)) - targets.to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP207",), preview=True) == [("VP207", 11, "MEDIUM")]


def test_compiled_function_passed_to_compile_and_module_compile_method(analyse):
    code = """\
    import torch

    def loss_fn(pred: torch.Tensor, target: torch.Tensor):
        diff = pred - target
        while diff.abs().max() > 1.0:
            diff = diff / 2
        return diff.pow(2).mean()

    class Head(torch.nn.Module):
        def forward(self, x):
            return x.tolist()

    fast_loss = torch.compile(loss_fn)
    head = Head()
    head.compile()
    for x, y in loader:
        loss = fast_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP207",), preview=True) == [("VP207", 5, "MEDIUM"), ("VP207", 11, "LOW")]


def test_uncompiled_code_shape_branches_and_tracing_checks_stay_quiet(analyse):
    code = """\
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def forward(self, x: torch.Tensor, mask=None):
            if mask is None and x.dim() == 3:
                x = x.unsqueeze(1)
            if torch._dynamo.is_compiling():
                return x
            print(x.mean().item())
            return x

    class Plain(nn.Module):
        def forward(self, x):
            return x.sum().item()

    compiled = torch.compile(Block())
    plain = Plain()
    """
    assert analyse(code, select=("VP207",), preview=True) == []
