"""VP201: Python's `max`/`min` compare their arguments on the host: `max(t.sum(), 1)` evaluates
`1 > t.sum()` and converts it to bool, and `max(t)` walks a tensor element by element. Either is a
host read of a device value; numbers (sizes, lengths, values already read) are not."""

from __future__ import annotations

SELECT = ("VP201",)


def test_a_tensor_compared_by_max_or_min_is_read_every_step(analyse):
    code = """\
    import torch

    def train(model, optimizer, loader):
        for x, y in loader:
            out = model(x.cuda(non_blocking=True))
            scores = out.sigmoid()
            normaliser = max(scores.sum(), 1)
            floor = min(1.0, scores.mean())
            loss = (out - y.cuda(non_blocking=True)).pow(2).sum() / normaliser + floor
            loss.backward()
            optimizer.step()
    """
    assert analyse(code, select=SELECT) == [("VP201", 7, "MEDIUM"), ("VP201", 8, "LOW")]


def test_numbers_compared_by_max_are_not_reads(analyse):
    code = """\
    import torch

    def train(model, optimizer, loader):
        best = 0.0
        for x, y in loader:
            out = model(x.cuda(non_blocking=True))
            loss = (out - y.cuda(non_blocking=True)).pow(2).mean()
            loss.backward()
            optimizer.step()
            count = max(x.size(0), 1)
            width = min(len(y), 8)
            best = max(best, count * 0.5)
    """
    assert analyse(code, select=SELECT) == []


def test_a_value_returned_on_the_device_by_a_module_is_a_tensor(analyse):
    code = """\
    import torch
    import torch.nn as nn

    class Assigner(nn.Module):
        def forward(self, scores, targets):
            return scores > 0.5, scores * targets

    class Criterion:
        def __init__(self):
            self.assigner = Assigner()

        def __call__(self, pred, targets):
            mask, weights = self.assigner(pred.detach().sigmoid(), targets)
            total = max(weights.sum(), 1)
            loss = (pred - targets).pow(2).sum() / total
            if mask.sum():
                loss = loss + pred.mean()
            if isinstance(pred, tuple) or pred.shape[0] == targets.shape[0] or targets is None:
                loss = loss * 1.0
            return loss

    def train(model, optimizer, loader, device):
        criterion = Criterion()
        for x in loader:
            x = x.to(device, non_blocking=True)
            loss = criterion(model(x), x)
            loss.backward()
            optimizer.step()
    """
    # `mask` and `weights` come back from a module whose inputs are on the device; a type test,
    # shapes and an identity test are Python values. `if mask.sum():` follows the read of line 14
    # with only a little math queued since: a round trip (LOW), not a second stall.
    assert analyse(code, select=SELECT) == [("VP201", 14, "MEDIUM"), ("VP201", 16, "LOW")]


def test_the_result_of_a_call_nothing_follows_is_not_taken_for_a_tensor(analyse):
    code = """\
    import torch

    def train(model, optimizer, loader, device):
        for x, y in loader:
            loss, parts = compute_loss(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
            if parts:
                print(len(parts))
    """
    assert analyse(code, select=SELECT) == []
