"""A model made by a factory function (`model = build_model(cfg)`, which returns `Net(...)`) is that
class's instance through the moves and wrappers of the usual set-up: `model = model.to(device)`,
`model = DDP(model)` in a distributed branch, then handed to a training function. Its `forward`
runs every step there, in whichever file it lives."""

from __future__ import annotations

from verifier.config import Settings
from verifier.static.runner import analyze_paths

NET = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        torch.cuda.synchronize()
        return self.fc(x)


def build_net(**kwargs):
    model = Net(**kwargs)
    return model
"""

TRAIN = """\
import torch
from models.net import build_net


def train(model, loader, optimizer):
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        optimizer.step()


def main(args, loader):
    model = build_net(width=8)
{setup}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, loader, optimizer)
"""


def findings(root, setup: str, net: str = NET) -> list[tuple[str, str, int, str]]:
    (root / "models").mkdir()
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "net.py").write_text(net)
    (root / "train.py").write_text(TRAIN.format(setup=setup))
    return vp203_findings(root)


def vp203_findings(root) -> list[tuple[str, str, int, str]]:
    result = analyze_paths([str(root)], Settings(select=("VP203",)))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings]


def test_a_factory_model_moved_to_the_device_runs_its_forward_every_step(tmp_path):
    assert findings(tmp_path, "    model = model.to('cuda')") == [("net.py", "VP203", 11, "HIGH")]


def test_and_wrapped_for_data_parallel_in_a_distributed_branch(tmp_path):
    setup = (
        "    model = model.to('cuda')\n"
        "    if args.distributed:\n"
        "        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])\n"
    )
    assert findings(tmp_path, setup) == [("net.py", "VP203", 11, "HIGH")]


def test_compiled_after_the_move(tmp_path):
    assert findings(tmp_path, "    model = torch.compile(model.cuda())") == [("net.py", "VP203", 11, "HIGH")]


def test_a_factory_that_returns_a_tensor_is_no_model(tmp_path):
    # `build_net` returns a tensor here: moving it gives no instance, so `model(x)` runs nothing known.
    net = NET.replace("    model = Net(**kwargs)\n    return model", "    return torch.zeros(4)")
    assert findings(tmp_path, "    model = model.to('cuda')", net) == []


def test_an_unpack_takes_only_the_returns_of_its_width(tmp_path):
    """`model, optimizer = get_model(train=True)` where `get_model` returns `model, optimizer` when
    training and `model` alone otherwise: only the pair can be unpacked, so `model` is the `Net`."""
    net = NET + """

def get_model(train=False):
    model = Net(width=8)
    if train:
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
    return model
"""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "net.py").write_text(net)
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from models.net import get_model\n"
        "\n"
        "model, optimizer = get_model(train=True)\n"
        "model = torch.nn.DataParallel(model)\n"
        "for x in loader:\n"
        "    loss = model(x.cuda()).sum()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    assert vp203_findings(tmp_path) == [("net.py", "VP203", 11, "HIGH")]


def test_a_package_reexport_seen_from_a_folder_without_init(tmp_path):
    """`utils/model.py` (no `__init__.py` in `utils/`) says `from model import Net`: run from the
    project root, that is the `model` package, which re-exports `Net` from `model/net.py`."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("from .net import Net\n")
    (tmp_path / "model" / "net.py").write_text(NET)
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "model.py").write_text(
        "from model import Net\n\n\ndef get_model():\n    return Net(width=8).cuda()\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "from utils.model import get_model\n"
        "\n"
        "model = get_model()\n"
        "for x in loader:\n"
        "    loss = model(x.cuda()).sum()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
    )
    assert vp203_findings(tmp_path) == [("net.py", "VP203", 11, "HIGH")]
