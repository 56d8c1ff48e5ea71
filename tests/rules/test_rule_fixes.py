"""The fixes VP308, VP405 and VP104 offer: the exact code each one writes, and the cases where a
fix could not be sure to keep the code working, which get none."""

from __future__ import annotations

import pytest

from verifier.config import Settings
from verifier.fixes.apply import apply_fixes
from verifier.rules import rule_by_selector
from verifier.static.engine import analyze_source
from verifier.static.source import decode_source


def fixed(code: str, text: str) -> str | None:
    """`text` once the one finding of `code` in it is fixed; None when it offers no fix."""
    (rule,) = rule_by_selector(code)
    (finding,) = analyze_source("train.py", decode_source(text.encode()), [rule], Settings()).findings
    return apply_fixes(text, [finding]).text if finding.autofix else None


LOOP = "for x, y in loader:\n    {line}\n    loss = criterion(model(x), y)\n    loss.backward()\n    optimizer.step()\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("torch.cuda.amp.autocast()", 'torch.autocast("cuda", dtype=torch.float16)'),
        ("torch.cuda.amp.autocast(enabled=use_amp)", 'torch.autocast("cuda", dtype=torch.float16, enabled=use_amp)'),
        ("torch.cuda.amp.autocast(use_amp, torch.bfloat16, False)",
         'torch.autocast("cuda", enabled=use_amp, dtype=torch.bfloat16, cache_enabled=False)'),
        ("torch.cpu.amp.autocast()", 'torch.autocast("cpu", dtype=torch.bfloat16)'),
        ("torch.cuda.amp.autocast_mode.autocast()", 'torch.autocast("cuda", dtype=torch.float16)'),
        ("torch.cuda.amp.GradScaler(2.0**12, 2.0)", 'torch.amp.GradScaler("cuda", 2.0**12, 2.0)'),
        ("torch.cpu.amp.GradScaler(enabled=False)", 'torch.amp.GradScaler("cpu", enabled=False)'),
    ],
)
def test_vp308_writes_the_torch_amp_call_that_means_the_same(before, after):
    text = f"import torch\nwith_amp = {before}\n"
    assert fixed("VP308", text) == f"import torch\nwith_amp = {after}\n"


def test_vp308_keeps_the_name_torch_is_imported_under():
    text = "import torch.cuda.amp\nimport torch as th\nscaler = th.cuda.amp.GradScaler()\n"
    assert fixed("VP308", text) == 'import torch.cuda.amp\nimport torch as th\nscaler = th.amp.GradScaler("cuda")\n'


@pytest.mark.parametrize(
    "text",
    [
        # A name imported on its own: `torch` may not be bound here.
        "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\n",
        "from torch.cuda import amp\nscaler = amp.GradScaler()\n",
        # Arguments the rewrite cannot place: hidden in `**kwargs`, or more positions than autocast had.
        "import torch\nctx = torch.cuda.amp.autocast(**amp_options)\n",
        "import torch\nctx = torch.cuda.amp.autocast(True, None, True, extra)\n",
        # A comment inside the spelling of the function would be lost.
        "import torch\nctx = (torch.cuda  # legacy\n       .amp.autocast())\n",
        # The decorator without a call: no device argument to give it.
        "import torch\n@torch.cuda.amp.custom_fwd\ndef forward(ctx, x):\n    return x\n",
    ],
)
def test_vp308_offers_no_fix_where_it_cannot_be_sure(text):
    assert fixed("VP308", text) is None


def test_vp405_drops_the_flag_keyword_or_positional():
    assert fixed("VP405", LOOP.format(line="optimizer.zero_grad(set_to_none=False)")) == LOOP.format(
        line="optimizer.zero_grad()"
    )
    assert fixed("VP405", LOOP.format(line="model.zero_grad( False )")) == LOOP.format(line="model.zero_grad()")


def test_vp405_leaves_a_commented_flag_and_gradients_zeroed_by_hand_alone():
    commented = "optimizer.zero_grad(\n        set_to_none=False,  # the clipping hook reads p.grad\n    )"
    assert fixed("VP405", LOOP.format(line=commented)) is None
    by_hand = "for p in model.parameters():\n        p.grad.zero_()"
    assert fixed("VP405", LOOP.format(line=by_hand)) is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("torch.zeros(x.shape[0]).to(device)", "torch.zeros(x.shape[0], device=device)"),
        ("torch.arange(seq_len).to(device=x.device)", "torch.arange(seq_len, device=x.device)"),
        ("torch.full((n, 1), 0.5, dtype=torch.half).cuda()", 'torch.full((n, 1), 0.5, dtype=torch.half, device="cuda")'),
        ("torch.tensor([0.1, 0.9]).to(device)", "torch.tensor([0.1, 0.9], device=device)"),
        # Parentheses around the moved tensor stay around the new call.
        ("(torch.ones(n).to(device))", "(torch.ones(n, device=device))"),
    ],
)
def test_vp104_creates_the_tensor_on_the_device(before, after):
    text = "import torch\n" + LOOP.format(line=f"w = {before}")
    assert fixed("VP104", text) == "import torch\n" + LOOP.format(line=f"w = {after}")


@pytest.mark.parametrize(
    "move",
    [
        "torch.randn(n, generator=cpu_generator).to(device)",  # a CPU generator cannot fill a CUDA tensor
        "torch.zeros(n, requires_grad=True).to(device)",  # the move made a non-leaf copy of a leaf
        "torch.zeros(n, pin_memory=True).to(device)",
        "torch.zeros(n).to(device, non_blocking=True)",
        "torch.zeros(n).to(device, torch.float16)",
        "torch.zeros(n).cuda(1)",
        "torch.zeros(n).float().to(device)",  # a cast in between: not the factory itself
        "torch.zeros(n).to(  # staging buffer\n        device)",
    ],
)
def test_vp104_offers_no_fix_beyond_a_plain_move_of_the_factory_call(move):
    text = "import torch\n" + LOOP.format(line=f"w = {move}")
    assert fixed("VP104", text) is None
