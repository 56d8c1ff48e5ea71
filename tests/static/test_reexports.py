"""A package's `__init__.py` that imports a name from its own modules (`from .focal import
FocalLoss`) lets callers import it from the package (`from losses import FocalLoss`): heat and
call binding follow the name to its definition, through chains of packages."""

from __future__ import annotations

from verifier.config import Settings
from verifier.static.runner import analyze_paths

FOCAL = """\
import torch
from torch import nn


class FocalLoss(nn.Module):
    def forward(self, logits, targets):
        torch.cuda.synchronize()
        return nn.functional.cross_entropy(logits, targets)
"""

TRAIN = """\
import torch
from {module} import FocalLoss


def train(model, optimizer, loader):
    criterion = FocalLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
"""


def findings(root, files: dict[str, str]) -> list[tuple[str, str, int, str, int]]:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code)
    result = analyze_paths([str(root)], Settings(select=("VP203",)))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name, f.heat_trace[0].line) for f in result.findings]


def test_a_loss_imported_from_its_package_runs_every_step(tmp_path):
    assert findings(tmp_path, {
        "losses/__init__.py": "from .focal import FocalLoss\n",
        "losses/focal.py": FOCAL,
        "train.py": TRAIN.format(module="losses"),
    }) == [("focal.py", "VP203", 7, "HIGH", 8)]


def test_through_two_packages_and_an_absolute_re_export(tmp_path):
    assert findings(tmp_path, {
        "lib/__init__.py": "from lib.losses import FocalLoss\n",
        "lib/losses/__init__.py": "from .focal import FocalLoss as FocalLoss\n",
        "lib/losses/focal.py": FOCAL,
        "train.py": TRAIN.format(module="lib"),
    }) == [("focal.py", "VP203", 7, "HIGH", 8)]


def test_imported_from_the_module_itself_as_before(tmp_path):
    assert findings(tmp_path, {
        "losses/__init__.py": "",
        "losses/focal.py": FOCAL,
        "train.py": TRAIN.format(module="losses.focal"),
    }) == [("focal.py", "VP203", 7, "HIGH", 8)]


def test_a_name_the_package_does_not_export_binds_to_nothing(tmp_path):
    assert findings(tmp_path, {
        "losses/__init__.py": "from .other import Something\n",
        "losses/focal.py": FOCAL,
        "losses/other.py": "class Something:\n    pass\n",
        "train.py": TRAIN.format(module="losses"),
    }) == []
