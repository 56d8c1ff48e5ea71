"""A tensor every caller hands a helper is a tensor in the helper (and on the accelerator when
the callers show it): `float(loss)` in `log_loss(loss)` is a read like `loss.item()`."""

from __future__ import annotations

SELECT = ("VP201",)


def test_a_helper_reads_the_device_tensor_its_callers_hand_it(analyse):
    code = """\
    import torch

    def log_loss(loss):
        value = float(loss)
        return value

    device = "cuda"
    model.to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        log_loss(loss)
    """
    assert analyse(code, select=SELECT) == [("VP201", 4, "MEDIUM")]


def test_a_helper_whose_callers_disagree_stays_unknown(analyse):
    code = """\
    import torch

    def log_loss(loss):
        value = float(loss)
        return value

    device = "cuda"
    model.to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        log_loss(loss)
    log_loss(0.5)
    """
    # One caller hands a number: `loss` is not known to be a tensor, and `float()` of a number is no read.
    assert analyse(code, select=SELECT) == []
