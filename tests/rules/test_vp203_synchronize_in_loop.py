"""VP203: a per-step `synchronize()` is a stall in a training loop whatever clock the loop reads
(HIGH when nothing is timed); one that times the step is the catalogue's timing pattern (LOW:
the stall costs the overlap at the step boundary), as in a benchmark's timed loop."""

from __future__ import annotations

import pytest

SELECT = ("VP203",)

TRAINING = """\
import time
import torch

t0 = time.time()
for x, y in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    dt = time.time() - t0
"""

BENCHMARK = """\
import time
import torch

def measure_latency(model, x, iters=50):
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        model(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times
"""

TIMED_HELPER = """\
import time
import torch

def elapsed(t0):
    torch.cuda.synchronize()
    return time.time() - t0

for x, y in loader:
    t0 = time.time()
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
    print(elapsed(t0))
"""


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (TRAINING, [("VP203", 9, "LOW")]),
        (BENCHMARK, [("VP203", 9, "LOW")]),
        # A helper not named for timing, called every step: its clock read does not make it a benchmark.
        (TIMED_HELPER, [("VP203", 5, "LOW")]),
    ],
    ids=["a-step-timer-in-a-training-loop", "a-benchmark-loop", "a-timing-helper-called-every-step"],
)
def test_a_clock_read_does_not_make_a_training_loop_a_benchmark(analyse, code, expected):
    assert analyse(code, select=SELECT) == expected


def test_a_sync_right_before_a_read_adds_little_on_its_own(analyse):
    # dino's shape: the next statement reads the loss on the host, which waits for the device anyway.
    code = """\
    import torch

    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        logger.update(loss=loss.item())
        torch.cuda.synchronize()
        logger.update(lr=0.1)
    """
    # The second synchronize is not before a read, but the step already drains at `loss.item()`.
    assert analyse(code, select=SELECT) == [("VP203", 7, "LOW"), ("VP203", 9, "LOW")]


def test_a_sync_in_a_step_that_already_reads_the_device_does_not_block(analyse):
    # MAE's shape: the loss is read before backward; the synchronize after the update is a second
    # wait per step. Without the read it is the step's only wait and blocks.
    code = """\
    import torch

    for x in loader:
        with torch.autocast("cuda"):
            loss = model(x.cuda())
        loss_value = loss.item()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.cuda.synchronize()
    """
    assert analyse(code, select=SELECT) == [("VP203", 10, "LOW")]
    assert analyse(code.replace("loss_value = loss.item()", "pass"), select=SELECT) == [("VP203", 10, "HIGH")]


def test_a_helper_s_synchronize_is_timed_by_the_step_loop_that_calls_it(analyse):
    code = """\
    import time
    import torch

    def update(optimizer):
        optimizer.step()
        torch.cuda.synchronize()

    def bare(optimizer):
        optimizer.zero_grad()
        torch.cuda.synchronize()

    for x, y in loader:
        t0 = time.perf_counter()
        model(x).sum().backward()
        update(optimizer)
        step_time = time.perf_counter() - t0

    for x, y in other_loader:
        model(x).sum().backward()
        optimizer.step()
        bare(optimizer)
    """
    # Extracting the timed step's synchronize into a helper keeps its finding (LOW); a helper
    # called by an untimed step loop stalls it as before (HIGH).
    assert analyse(code, select=("VP203",)) == [("VP203", 6, "LOW"), ("VP203", 10, "HIGH")]


def test_a_timed_step_that_already_reads_the_device_is_a_second_wait_too(analyse):
    # Adding a step timer changes no device work: the synchronize stays a second wait (LOW).
    code = """\
    import time
    import torch

    for x in loader:
        t0 = time.time()
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        print(loss.item())
        torch.cuda.synchronize()
        dt = time.time() - t0
    """
    assert analyse(code, select=SELECT) == [("VP203", 10, "LOW")]
    assert analyse(code.replace("t0 = time.time()", "pass").replace("dt = time.time() - t0", "pass"), select=SELECT) == [
        ("VP203", 10, "LOW")
    ]


EVENT_TIMED_STEP = """\
import torch

for x in loader:
    start = torch.cuda.Event(enable_timing={timing})
    end = torch.cuda.Event(enable_timing={timing})
    torch.cuda.synchronize()
    start.record()
    model(x).sum().backward()
    optimizer.step()
    end.record()
"""


def test_cuda_events_made_to_time_make_the_step_a_timed_one(analyse):
    # The catalogue's timing pattern: LOW. Events that do not time are no clock: HIGH.
    assert analyse(EVENT_TIMED_STEP.format(timing="True"), select=SELECT) == [("VP203", 6, "LOW")]
    assert analyse(EVENT_TIMED_STEP.format(timing="False"), select=SELECT) == [("VP203", 6, "HIGH")]


def test_a_stream_or_event_sync_states_its_cost_as_assumed(tmp_path):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "train.py").write_text(
        "import torch\n\nfor x in loader:\n    model(x).sum().backward()\n    optimizer.step()\n"
        "    torch.cuda.current_stream().synchronize()\n"
    )
    (found,) = analyze_paths([str(tmp_path)], Settings(select=("VP203",))).findings
    assert (found.line, found.severity.name) == (6, "MEDIUM")  # capped by the assumed cost
    assert [(e.premise.value, e.status.value) for e in found.evidence] == [("cost", "assumed"), ("frequency", "proven")]


EVENT_READ_PER_EPOCH = """\
import torch

starter = torch.cuda.Event(enable_timing=True)
ender = torch.cuda.Event(enable_timing=True)
seconds = 0.0
for epoch in range(epochs):
    starter.record()
    for x, y in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()
    ender.record()
    torch.cuda.synchronize()
    seconds += 1e-3 * starter.elapsed_time(ender)
"""


def test_a_synchronize_that_lets_cuda_events_be_read_is_the_timing_fix_itself(analyse):
    # The rule's own fix: events around the work, one wait to read them. Once per epoch it is
    # no finding; moved into the step loop it waits every step to time it (LOW).
    assert analyse(EVENT_READ_PER_EPOCH, select=SELECT) == []
    per_step = (
        EVENT_READ_PER_EPOCH.replace("    ender.record()\n    torch.cuda.synchronize()\n    seconds", "        ender.record()\n        torch.cuda.synchronize()\n        seconds")
    )
    assert analyse(per_step, select=SELECT) == [("VP203", 12, "LOW")]


def test_an_event_timer_helper_called_each_epoch_is_the_same_idiom(analyse):
    # airbench's shape: a nested stop_timer() records, synchronizes, then reads the events.
    code = """\
    import torch

    def main(model, loader, optimizer, epochs):
        starter = torch.cuda.Event(enable_timing=True)
        ender = torch.cuda.Event(enable_timing=True)
        seconds = 0.0

        def stop_timer():
            ender.record()
            torch.cuda.synchronize()
            nonlocal seconds
            seconds += 1e-3 * starter.elapsed_time(ender)

        for epoch in range(epochs):
            starter.record()
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()
            stop_timer()
        return seconds
    """
    assert analyse(code, select=SELECT) == []
    # Without the event read the helper's synchronize stalls every epoch (before: MEDIUM here too).
    assert analyse(code.replace("seconds += 1e-3 * starter.elapsed_time(ender)", "seconds += 1.0"), select=SELECT) == [
        ("VP203", 10, "MEDIUM")
    ]
