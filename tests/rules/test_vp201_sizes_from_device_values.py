"""VP201: a size is a Python int, so a device tensor given as one (`torch.zeros(b,
lengths.max())`, `range(n)`, `x.view(b, t.sum())`) is read on the host first."""

from __future__ import annotations

SELECT = ("VP201",)


def test_device_values_used_as_sizes_are_reads(analyse):
    code = """\
    import torch

    for x, lengths in loader:
        x, lengths = x.cuda(non_blocking=True), lengths.cuda(non_blocking=True)
        longest = lengths.max()
        padded = torch.zeros(x.shape[0], longest, device=x.device)
        flat = x.view(x.shape[0], lengths.sum())
        host_sizes = torch.tensor([3, 4])
        fine = torch.zeros(host_sizes.max(), 8, device=x.device)
        for i in range(len(lengths)):
            pass
        loss = model(padded, flat, fine).sum()
        loss.backward()
        optimizer.step()
    """
    # The view's read follows the zeros' (the queue already drained: a round trip, LOW);
    # `host_sizes` is made on the host and `len()` is a Python int: neither waits for the device.
    assert analyse(code, select=SELECT) == [("VP201", 6, "MEDIUM"), ("VP201", 7, "LOW")]
