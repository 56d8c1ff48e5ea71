"""VP202: a call that changes the value in place between two reads (`scaler.update()`,
`t.add_(1)`) makes the second read one of another value: no repeat."""

from __future__ import annotations

SELECT = ("VP202",)


def test_a_scale_read_before_and_after_update_is_no_repeat(analyse):
    code = """\
    import torch
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x.cuda(), y.cuda())
        scaler.scale(loss).backward()
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        scale_after = scaler.get_scale()
        skipped = scale_after < scale_before
    """
    assert analyse(code, select=SELECT) == []


def test_an_in_place_change_between_reads_is_no_repeat_a_plain_second_read_is(analyse):
    code = """\
    import torch
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        total = loss.item()
        again = loss.item()
        loss.mul_(0.5)
        half = loss.item()
    """
    assert analyse(code, select=SELECT) == [("VP202", 7, "LOW")]
