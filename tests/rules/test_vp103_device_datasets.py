"""VP103: a loader over a `TensorDataset` of tensors already on the accelerator slices device
memory; workers and pinned memory have nothing to load or pin there (pinning a CUDA tensor even
fails). A `TensorDataset` of host tensors is a loader like any other."""

from __future__ import annotations

SELECT = ("VP103",)

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

DEVICE = torch.device("cuda")
x = torch.randn(1000, 4){placed}
y = torch.randn(1000, 1){placed}
train_dataset = TensorDataset(x, y)
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
inline_loader = DataLoader(TensorDataset(x, y), batch_size=32)
model = torch.nn.Linear(4, 1).to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    for xb, yb in train_loader:
        loss = (model(xb.to(DEVICE)) - yb.to(DEVICE)).pow(2).mean()
        loss.backward()
        opt.step()
    for xb, yb in inline_loader:
        model(xb.to(DEVICE))
"""


def test_loaders_over_device_tensors_are_left_alone(analyse):
    assert analyse(SCRIPT.format(placed=".to(DEVICE)"), select=SELECT) == []


def test_loaders_over_host_tensors_are_reported(analyse):
    assert analyse(SCRIPT.format(placed=""), select=SELECT) == [("VP103", 8, "LOW"), ("VP103", 9, "LOW")]
