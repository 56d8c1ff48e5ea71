"""VP103: DataLoader found by qualified name however imported; silent where values are unknown."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

CUDA = 'model.to("cuda")\n'


@pytest.mark.parametrize(
    "imports, call",
    [
        ("import torch", "torch.utils.data.DataLoader(ds, batch_size=8)"),
        ("import torch.utils.data as tud", "tud.DataLoader(ds, batch_size=8)"),
        ("from torch.utils.data import DataLoader as DL", "DL(ds, batch_size=8)"),
        ("from torch.utils import data", "data.DataLoader(ds, batch_size=8)"),
        ("from torch.utils.data.dataloader import DataLoader", "DataLoader(ds, batch_size=8)"),
        # torchdata's drop-in subclass keeps DataLoader's defaults: no workers, no pinning.
        ("from torchdata.stateful_dataloader import StatefulDataLoader", "StatefulDataLoader(ds, batch_size=8)"),
    ],
)
def test_every_spelling_of_torch_dataloader_is_found(analyse, imports, call):
    assert analyse(f"{imports}\nloader = {call}\n{CUDA}", select=("VP103",)) == [("VP103", 2, "LOW")]


def test_a_dataloader_that_is_not_torch_is_ignored(analyse):
    code = "from mylib import DataLoader\nloader = DataLoader(ds)\nclass DataLoader: ...\nDataLoader(ds)\n"
    assert analyse(code, select=("VP103",)) == []


def test_star_arguments_and_variables_are_trusted(analyse):
    code = """\
    from torch.utils.data import DataLoader
    a = DataLoader(ds, **loader_kwargs)
    b = DataLoader(*args)
    c = DataLoader(ds, num_workers=cfg.workers, pin_memory=cfg.pin, persistent_workers=cfg.keep)
    model.cuda()
    """
    assert analyse(code, select=("VP103",)) == []


def test_one_finding_names_every_problem_and_cuda_can_appear_after_the_loader(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        textwrap.dedent(
            """\
            from torch.utils.data import DataLoader
            loader = DataLoader(ds, batch_size=8)
            workers = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
            device = torch.device("cuda:0")
            for epoch in range(epochs):
                for x, y in workers:
                    x, y = x.to(device), y.to(device)
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
            """
        )
    )
    findings = analyze_paths([str(path)], Settings(select=("VP103",))).findings
    assert [(f.line, f.severity.name) for f in findings] == [(2, "LOW"), (3, "LOW")]
    first, second = findings
    assert "num_workers" in first.message and "pin_memory" in first.message
    assert "persistent_workers" not in first.message
    assert "`num_workers=N` (N > 0)" in first.fix and "`pin_memory=True`" in first.fix
    assert "persistent_workers" in second.message and "pin_memory" not in second.message


def test_pinning_is_not_asked_for_when_the_module_never_uses_cuda(analyse):
    code = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2, persistent_workers=True)\n"
    assert analyse(code, select=("VP103",)) == []
    assert analyse(code + CUDA, select=("VP103",)) == [("VP103", 2, "LOW")]


def test_a_loader_at_the_top_level_of_a_host_only_module_is_a_demo(analyse):
    code = """\
    from torch.utils.data import DataLoader

    def make_loader(dataset):
        return DataLoader(dataset, batch_size=64)

    if __name__ == "__main__":
        demo = DataLoader(VOC("data/voc"), batch_size=4)
        print(next(iter(demo)))
    """
    # The function's loader may feed a caller's (or a framework's) accelerator; the demo cannot.
    assert analyse(code, select=("VP103",)) == [("VP103", 4, "LOW")]
