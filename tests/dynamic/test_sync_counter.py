"""The sync counter charges syncs to the user's code, not torch's, and sees every sync kind."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from verifier.dynamic.sync_counter import CudaSyncDebugWarnings, SyncCounter, is_sync_call
from verifier.reference_impl.presets import get_preset
from verifier.reference_impl.session import build_session

pytestmark = pytest.mark.usefixtures("one_thread")

FIXTURES = Path(__file__).parent / "fixtures"


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_reference_training_step_has_no_syncs(one_thread):
    session = build_session(get_preset("tiny"), "bf16", torch.device("cpu"))
    try:
        session.step()
        with SyncCounter() as counter:
            for _ in range(2):
                session.step()
    finally:
        session.close()
    summary = counter.summary(2)
    assert summary.user_per_step == 0
    assert summary.library_per_step == 0


def test_bad_step_has_one_user_sync_per_step_at_the_item_line(entry_fixtures):
    from bad_step import bad_train_step, make_classifier

    model, optimizer = make_classifier()
    with SyncCounter() as counter:
        for step in range(3):
            bad_train_step(model, optimizer, step)
    summary = counter.summary(3)

    item_line = line_of(FIXTURES / "bad_step.py", "return loss.item()")
    assert summary.user_per_step == 1
    assert [(site.kind, site.count) for site in summary.user_sites] == [("item", 3)]
    assert summary.user_sites[0].location.endswith(f"bad_step.py:{item_line}")


def test_torch_internal_syncs_are_library_syncs():
    # Non-fused Adam keeps its step counter on the host side and reads it with .item().
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.Adam(model.parameters(), foreach=False)
    model(torch.randn(2, 4)).sum().backward()
    with SyncCounter() as counter:
        optimizer.step()
    summary = counter.summary(1)
    assert summary.user_total == 0
    assert summary.library_total == 2  # one per parameter tensor
    assert summary.library_sites[0].location.endswith(f"test_sync_counter.py:{line_of(Path(__file__), 'optimizer.step()')}")


def sync_kinds(action) -> list[str]:
    with SyncCounter() as counter:
        action()
    return sorted(event.kind for event in counter.events if not event.internal)


@pytest.mark.parametrize(
    ("action", "kinds"),
    [
        (lambda t: t.sum().item(), ["item"]),
        (lambda t: bool(t.sum() > 0), ["__bool__"]),
        (lambda t: float(t.sum()), ["__float__"]),
        (lambda t: int(t.sum()), ["__int__"]),
        (lambda t: list(range(5))[t.argmax()], ["__index__"]),
        (lambda t: f"{t.sum():.2f}", ["__format__"]),
        (lambda t: repr(t), ["__repr__"]),
        (lambda t: t.tolist(), ["tolist"]),
        (lambda t: t.cpu(), ["cpu"]),
        (lambda t: t[t > 0], ["__getitem__"]),
        (lambda t: t.nonzero(), ["nonzero"]),
        (lambda t: torch.equal(t, t), ["equal"]),
        (lambda t: t.to("cpu"), []),
        (lambda t: t[1:], []),
        (lambda t: t * 2 + 1, []),
    ],
)
def test_each_sync_kind_is_seen(action, kinds):
    tensor = torch.arange(-2.0, 3.0)
    assert sync_kinds(lambda: action(tensor)) == kinds


def test_explicit_cuda_synchronize_is_counted_and_restored():
    original = torch.cuda.synchronize
    with SyncCounter() as counter:
        try:
            torch.cuda.synchronize()
        except (RuntimeError, AssertionError):
            pass  # no CUDA here: the call is still a sync the user asked for
    assert [event.kind for event in counter.events] == ["cuda.synchronize"]
    assert torch.cuda.synchronize is original


def test_other_threads_are_not_counted():
    def background() -> None:
        torch.ones(3).sum().item()

    with SyncCounter() as counter:
        worker = threading.Thread(target=background)
        worker.start()
        worker.join()
    assert counter.events == []


def test_host_bound_copy_counts_only_from_a_device():
    meta = torch.empty(3, device="meta")
    assert is_sync_call("to", (meta, "cpu"), {})
    assert not is_sync_call("to", (meta, "meta"), {})
    assert not is_sync_call("to", (torch.ones(3), "cpu"), {})


def test_summary_needs_at_least_one_step():
    with pytest.raises(ValueError):
        SyncCounter().summary(0)


def test_sync_debug_mode_is_left_alone_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with CudaSyncDebugWarnings() as flagged:
        torch.ones(2).sum().item()
    assert flagged.count is None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_sync_debug_mode_flags_a_device_item_and_is_restored():
    previous = torch.cuda.get_sync_debug_mode()
    with CudaSyncDebugWarnings() as flagged:
        torch.ones(2, device="cuda").sum().item()
    assert flagged.count >= 1
    assert torch.cuda.get_sync_debug_mode() == previous
