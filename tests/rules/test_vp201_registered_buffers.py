"""VP201: a module's registered buffer is a tensor where the module lives, so testing it in a
step (`if self.update_count >= anneal:`) waits for the device."""

from __future__ import annotations

SELECT = ("VP201",)

ALGORITHM = """\
import torch
import torch.nn as nn


class IRM(nn.Module):
    def __init__(self, net, hparams):
        super().__init__()
        self.net = net
        self.hparams = hparams
        self.optimizer = torch.optim.Adam(self.net.parameters())
        self.register_buffer("update_count", {buffer})

    def update(self, x):
        loss = self.net(x).mean()
        if self.update_count == self.hparams["anneal_iters"]:
            self.optimizer = torch.optim.Adam(self.net.parameters())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.update_count += 1


def main(hparams, loader, device):
    algorithm = IRM(Net(), hparams)
    algorithm.to(device)
    for x in loader:
        algorithm.update(x.to(device))
"""


def test_a_registered_buffer_tested_every_step_is_a_device_read(analyse):
    code = ALGORITHM.format(buffer="torch.tensor([0])")
    assert analyse(code, select=SELECT) == [("VP201", 15, "MEDIUM")]


def test_a_buffer_registered_as_none_is_no_tensor(analyse):
    code = ALGORITHM.format(buffer="None")
    assert analyse(code, select=SELECT) == []
