"""VP304: a GradScaler updated without a step; a name that merely contains `scaler` is no scaler."""

from __future__ import annotations


def test_a_meter_named_after_the_scaler_is_no_scaler(analyse):
    # `scaler_meter.update(...)` updates a meter; only the GradScaler's own update needs a step.
    code = """\
    import torch

    scaler = torch.amp.GradScaler("cuda")
    scaler_meter = AverageMeter()
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x.cuda(non_blocking=True)).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scaler_meter.update(1.0)
    """
    assert analyse(code, select=("VP304",)) == []
