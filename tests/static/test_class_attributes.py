"""A `self.` attribute whose bindings disagree across methods has no place another method can take
as proven: AudioLM's trainers register `steps` as a buffer in `__init__` (it lives wherever the
module goes, the host by default) and only `load()`, when resuming, rebinds it on the device, so
`int(self.steps.item())` in `train_step()` is a read of a value whose place is unknown (LOW), not a
proven device read (MEDIUM)."""

from __future__ import annotations

TRAINER = """\
import torch
from torch import nn


class Trainer(nn.Module):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model, self.optimizer = model, optimizer
        {init}

    def load(self, step):
        self.steps = torch.tensor([step], device="cuda")
        print(self.steps.item())

    def train_step(self, x):
        steps = int(self.steps.item())
        loss = self.model(x.cuda()).sum()
        loss.backward()
        self.optimizer.step()
        return steps

    def train(self, loader):
        for x in loader:
            self.train_step(x)
"""


def test_a_buffer_rebound_on_the_device_in_another_method_has_no_proven_place(analyse):
    code = TRAINER.format(init="self.register_buffer('steps', torch.tensor(0))")
    assert [f for f in analyse(code, select=("VP201",)) if f[1] == 16] == [("VP201", 16, "LOW")]


def test_a_host_factory_in_init_and_a_device_one_elsewhere_disagree_too(analyse):
    code = TRAINER.format(init="self.steps = torch.tensor(0)")
    assert [f for f in analyse(code, select=("VP201",)) if f[1] == 16] == [("VP201", 16, "LOW")]


def test_bindings_that_agree_keep_the_place(analyse):
    code = TRAINER.format(init='self.steps = torch.zeros(1, device="cuda")')
    assert [f for f in analyse(code, select=("VP201",)) if f[1] == 16] == [("VP201", 16, "MEDIUM")]
