"""`images[0] = images[0].cuda()`: storing a part moved to the device in a host batch leaves the
container in no one place (`PlaceFacts._store_item`), so what a model computes from its parts is
not taken for host memory once the project pass knows the batch comes from a DataLoader (the file
analysed again because a branch elsewhere in it asked about its callers). Storing a number
(`logits[mask] = 0`) keeps the container where it was."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

TRAIN = """\
import torch
from torch.utils.data import DataLoader


def train(train_loader, model, optimizer):
    for images, _ in train_loader:
        images[0] = images[0].cuda(non_blocking=True)
        images[1] = images[1].cuda(non_blocking=True)
        p1, p2 = model(images[0], images[1])
        loss = (p1 - p2).pow(2).mean()
        print(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(dataset, model, optimizer):
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True, persistent_workers=True)
    train(loader, model, optimizer)
    save({"model": model}, False)


def save(state, is_best):
    if is_best:
        torch.save(state, "best.pt")
"""


def findings(tmp_path, code):
    (tmp_path / "train.py").write_text(textwrap.dedent(code))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201",)))
    return [(f.code, f.line, f.severity.name) for f in result.findings]


def test_a_part_moved_into_a_host_batch_leaves_the_batch_in_no_one_place(tmp_path):
    assert findings(tmp_path, TRAIN) == [("VP201", 11, "MEDIUM")]


def test_a_number_stored_in_a_device_tensor_keeps_it_there(tmp_path):
    code = """\
    import torch


    def train(model, loader, optimizer):
        model = model.cuda()
        for x, mask in loader:
            logits = model(x.cuda(non_blocking=True))
            logits[mask.cuda(non_blocking=True)] = 0
            loss = logits.mean()
            print(loss.item())
            loss.backward()
            optimizer.step()
    """
    assert findings(tmp_path, code) == [("VP201", 10, "MEDIUM")]


def test_a_value_stored_in_a_host_tensor_leaves_the_tensor_in_host_memory(tmp_path):
    # `scores[i] = score` copies a device value into the host tensor (that copy is the read): the
    # tensor is still in host memory, and reading it again waits for nothing.
    code = """\
    import torch


    def train(model, loader, optimizer):
        model = model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            scores = torch.zeros(4)
            scores[0] = loss.detach()
            print(scores.tolist())
    """
    assert findings(tmp_path, code) == []
