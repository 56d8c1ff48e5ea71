"""VP201: the first read in a row drains the queue; the reads right after it cost a round trip."""

from __future__ import annotations

SELECT = ("VP201",)


def test_a_read_right_after_a_read_is_low(analyse):
    code = """\
    import torch
    device = "cuda"
    model.to(device)
    for x, y in loader:
        class_loss, kd_loss = model(x.to(device), y.to(device))
        (class_loss + kd_loss).backward()
        optimizer.step()
        class_value = class_loss.detach().item()
        kd_value = kd_loss.detach().item()
        optimizer.zero_grad()
        total = class_loss.item()
    """
    # Line 9 follows the read of line 8 (the queue is drained); line 11 comes after new work.
    assert analyse(code, select=SELECT) == [("VP201", 8, "MEDIUM"), ("VP201", 9, "LOW"), ("VP201", 11, "MEDIUM")]


def test_a_read_of_a_shape_syncs_result_is_a_round_trip(analyse):
    # `nonzero`/`masked_select` already waited for the queue to size their output (VP205's
    # finding on the same line); the `.item()` of their result waits only for a round trip.
    code = """\
    import torch
    def train(model, optimizer, loader, device):
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            out = model(x)
            correct = out.gt(0).masked_select(out > 1).sum().item()
            first = [row.nonzero().item() for row in out]
            loss = out.mean()
            loss.backward()
            optimizer.step()
    """
    assert analyse(code, select=("VP201", "VP205")) == [("VP201", 6, "LOW"), ("VP205", 6, "MEDIUM"), ("VP201", 7, "LOW")]
