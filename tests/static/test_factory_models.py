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
