"""VP308: deprecated AMP objects by qualified name; an implicit-device GradScaler only where CUDA may be absent."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "code",
    [
        "from torch.cuda import amp\nscaler = amp.GradScaler()\n",
        "import torch.cuda.amp as amp\nscaler = amp.GradScaler(init_scale=1024)\n",
        "from torch.cpu.amp import autocast\nwith autocast():\n    pass\n",
        "import torch\n@torch.cuda.amp.custom_bwd\ndef backward(ctx, g):\n    return g\n",
        "from torch.cuda.amp import custom_fwd\n@custom_fwd(cast_inputs=torch.float32)\ndef forward(ctx, x):\n    return x\n",
    ],
)
def test_deprecated_objects_are_found_however_imported(analyse, code):
    assert [row[0] for row in analyse(code, select=("VP308",))] == ["VP308"]


def test_the_import_alone_is_not_a_finding(analyse):
    assert analyse("from torch.cuda.amp import GradScaler, autocast\n", select=("VP308",)) == []


@pytest.mark.parametrize(
    "evidence, expected",
    [
        ("", []),
        ("if torch.cuda.is_available():\n    model.cuda()\n", [("VP308", 2, "LOW")]),
        ("device = 'mps'\n", [("VP308", 2, "LOW")]),
        ("state = torch.load(path, map_location='cpu')\n", []),
    ],
)
def test_an_implicit_device_scaler_needs_evidence_that_cuda_may_be_absent(analyse, evidence, expected):
    code = "import torch\nscaler = torch.GradScaler()\n" + evidence
    assert analyse(code, select=("VP308",)) == expected


def test_a_fallback_import_for_old_torch_does_not_replace_the_new_one(analyse):
    # The `try` import is what runs on torch >= 2.3; the handler's only where it fails.
    code = """\
import torch
try:
    from torch import GradScaler
except ImportError:
    from torch.cuda.amp import GradScaler

scaler = GradScaler("cuda")
"""
    assert analyse(code, select=("VP308",)) == []
    only_old = "import torch\nfrom torch.cuda.amp import GradScaler\n\nscaler = GradScaler()\n"
    assert analyse(only_old, select=("VP308",)) == [("VP308", 4, "LOW")]
