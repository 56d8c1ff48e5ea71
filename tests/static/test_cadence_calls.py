"""A rate-limit test around a call that steps the optimizer is the update cadence, as it is inline."""

from __future__ import annotations

SELECT = ("VP201", "VP203")


def test_an_update_helper_called_at_the_accumulation_cadence_runs_every_step(analyse):
    code = """\
    import torch
    model = Net().cuda()

    def update(optimizer, loss):
        optimizer.step()
        value = loss.item()
        torch.cuda.synchronize()

    def log(loss):
        print(loss.item())

    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda()) / 4
        loss.backward()
        if (step + 1) % 4 == 0:
            update(optimizer, loss)
        if step % 100 == 0:
            log(loss)
    """
    # `update` steps the optimizer: its guard is the cadence (step heat); `log` does not: a rate limit.
    # The synchronize follows a read of the same body: a second wait, not blocking on its own.
    assert analyse(code, select=SELECT) == [("VP201", 6, "MEDIUM"), ("VP203", 7, "LOW")]


def test_the_same_statements_inline_give_the_same_findings(analyse):
    code = """\
    import torch
    model = Net().cuda()
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda()) / 4
        loss.backward()
        if (step + 1) % 4 == 0:
            optimizer.step()
            value = loss.item()
            torch.cuda.synchronize()
    """
    assert analyse(code, select=SELECT) == [("VP201", 8, "MEDIUM"), ("VP203", 9, "LOW")]


def test_an_interval_kept_by_hand_is_a_rate_limit(analyse):
    code = """\
    import torch
    model = Net().cuda()
    last_eval = 0

    def maybe_report(step, loss):
        global last_eval
        if step - last_eval < 500:
            return
        last_eval = step
        print(loss.item())

    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        maybe_report(step, loss)
        if step - last_eval >= 100:
            print(loss.item())
    """
    assert analyse(code, select=("VP201",)) == []


def test_the_rest_of_an_iteration_skipped_unless_the_step_matches_runs_once(analyse):
    code = """\
    import torch
    model = Net().cuda()
    SCHEDULE = [(100, 0.5), (200, 0.25)]

    def apply_schedule(step, stats):
        for i, (at, gamma) in enumerate(SCHEDULE):
            if gamma == 0.0 or step != at:
                continue
            print(stats.item())

    def capture(step, stats):
        if step != 500 or stats is None:
            return
        print(stats.item())

    for step, (x, y) in enumerate(loader):
        if step == 10_000:
            break
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        apply_schedule(step, loss)
        capture(step, loss)
        print(loss.item())
    """
    # The `break` ends the loop: the read after it runs every step, proven (MEDIUM, no cap needed).
    assert analyse(code, select=("VP201",)) == [("VP201", 24, "MEDIUM")]
