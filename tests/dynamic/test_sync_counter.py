"""The sync counter charges syncs to the user's code, not torch's, and sees every sync kind."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

from verifier.dynamic.sync_counter import HOST_TAG, CudaSyncDebugWarnings, HostDataTags, Residency, SyncCounter, is_sync_call
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
        with SyncCounter(simulated=True) as counter:
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
    with SyncCounter(simulated=True) as counter:
        for step in range(3):
            bad_train_step(model, optimizer, step)
    summary = counter.summary(3)

    item_line = line_of(FIXTURES / "bad_step.py", "return loss.item()")
    assert summary.user_per_step == 1
    assert [(site.kind, site.count) for site in summary.user_sites] == [("item", 3)]
    assert summary.user_sites[0].location.endswith(f"bad_step.py:{item_line}")


def test_torch_internal_syncs_are_library_syncs():
    # clip_grad_norm_(error_if_nonfinite=True) reads the device norm back inside torch itself.
    model = torch.nn.Linear(4, 4)
    model(torch.randn(2, 4)).sum().backward()
    with SyncCounter(simulated=True) as counter:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    summary = counter.summary(1)
    assert summary.user_total == 0
    assert summary.library_total == 1
    assert summary.library_sites[0].kind == "__bool__"
    assert summary.library_sites[0].location.endswith(f"test_sync_counter.py:{line_of(Path(__file__), 'torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)')}")


def test_reading_a_host_tensor_is_no_sync():
    # Non-fused Adam keeps its step counter on the host and reads it with .item(): no device sync.
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.Adam(model.parameters(), foreach=False)
    model(torch.randn(2, 4)).sum().backward()
    with SyncCounter(simulated=True) as counter:
        optimizer.step()
        optimizer.step()
    assert counter.events == []


def sync_kinds(action) -> list[str]:
    with SyncCounter(simulated=True) as counter:
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
        (lambda t: t.to("cpu"), ["to"]),
        (lambda t: t.sum().cpu().item(), ["cpu"]),
        (lambda t: 1.0 in t, ["__contains__"]),
        (lambda t: torch.bincount(t.long().clamp(min=0)), ["bincount"]),
        (lambda t: torch.repeat_interleave(t, t.long().clamp(min=0)), ["repeat_interleave"]),
        (lambda t: torch.nn.functional.one_hot(t.long().clamp(min=0)), ["one_hot"]),
        (lambda t: torch.nn.functional.one_hot(t.long().clamp(min=0), 3), []),
        (lambda t: torch.ones(3).to(t.device), ["blocking host-to-device copy"]),
        (lambda t: torch.ones(3).to(t.device, non_blocking=True), []),
        (lambda t: torch.arange(3).sum().item(), []),
        (lambda t: torch.tensor([1, 2]).tolist(), []),
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

    with SyncCounter(simulated=True) as counter:
        worker = threading.Thread(target=background)
        worker.start()
        worker.join()
    assert counter.events == []


def test_host_bound_copy_counts_only_from_a_device():
    simulated = Residency(simulated=True)
    device_tensor, host_tensor = torch.ones(3), torch.ones(3)
    setattr(host_tensor, HOST_TAG, True)
    assert is_sync_call("to", (device_tensor, "cpu"), {}, simulated) == "to"
    assert is_sync_call("to", (host_tensor, "cpu"), {}, simulated) is None
    assert is_sync_call("to", (host_tensor, torch.device("cpu")), {}, simulated) == "blocking host-to-device copy"
    assert is_sync_call("to", (host_tensor, torch.device("cpu")), {"non_blocking": True}, simulated) is None
    # Without simulation a CPU tensor is host data: nothing it does syncs.
    assert is_sync_call("to", (device_tensor, "cpu"), {}) is None
    assert is_sync_call("item", (device_tensor,), {}) is None


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


SYNC_STEPS = FIXTURES / "sync_steps.py"


def count_entry(name: str, steps: int = 3):
    import sync_steps

    with HostDataTags():
        step = getattr(sync_steps, name)(torch.device("cpu"))["train_step"]
    step("fp32")
    with SyncCounter(simulated=True) as counter:
        for _ in range(steps):
            step("fp32")
    return counter.summary(steps)


def test_two_items_per_step_are_two_syncs_per_step_at_their_line(entry_fixtures):
    summary = count_entry("two_items")
    line = line_of(SYNC_STEPS, "return loss.item() + loss.detach().abs().item()")
    assert summary.user_per_step == 2
    assert [(s.location, s.kind, s.count) for s in summary.user_sites] == [(f"tests/dynamic/fixtures/sync_steps.py:{line}", "item", 6)]


def test_host_only_reads_count_zero(entry_fixtures):
    summary = count_entry("host_reads_only")
    assert (summary.user_total, summary.library_total) == (0, 0)


def test_syncs_in_backward_hooks_and_through_logging_are_charged_to_the_user_line(entry_fixtures):
    summary = count_entry("sync_in_backward_hook")
    hook = line_of(SYNC_STEPS, "register_hook(lambda grad: grad.norm().item() and None)")
    logged = line_of(SYNC_STEPS, 'log.debug("loss %s", loss)')
    assert {(s.location, s.kind, s.count) for s in summary.user_sites} == {
        (f"tests/dynamic/fixtures/sync_steps.py:{hook}", "item (in backward or a hook)", 3),
        (f"tests/dynamic/fixtures/sync_steps.py:{logged}", "__repr__", 3),
    }
    assert summary.library_total == 0


def _library_sites(step, steps: int = 2):
    step()  # optimizer state and lazy set-up exist before counting, as after a warm-up
    with SyncCounter(simulated=True) as counter:
        for _ in range(steps):
            step()
    return counter.summary(steps)


def _tiny_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.Linear(8, 10))


def test_cpu_adamw_step_counter_read_is_named_and_said_to_be_no_sync_on_cuda():
    model, tokens = _tiny_model(), torch.randint(0, 10, (4,))
    for fused, expected in ((False, 3 * 2), (True, 0)):
        optimizer = torch.optim.AdamW(model.parameters(), fused=fused)

        def step():
            torch.nn.functional.cross_entropy(model(tokens), tokens).backward()
            optimizer.step()  # the library sync is charged to this line
            optimizer.zero_grad()

        summary = _library_sites(step)
        assert summary.library_total == expected
        if not fused:
            (site,) = summary.library_sites
            assert site.location.endswith(f"test_sync_counter.py:{_line_of('            optimizer.step()  # the library sync is charged to this line')}")
            assert (site.kind, site.count, site.call, site.library, site.on_cuda) == ("item", 6, "AdamW.step", "torch.optim", False)
            assert site.operation == "reads the per-parameter step counter (state['step'].item())"
            assert site.cuda_note.startswith("the counter is a host tensor on CUDA unless capturable=True")
        else:
            assert summary.library_sites == ()


def test_scaler_inf_check_and_a_checked_clip_are_named_and_sync_on_cuda():
    model, tokens = _tiny_model(), torch.randint(0, 10, (4,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1.0)

    def step():
        with torch.autocast("cpu", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(tokens), tokens)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

    sites = {site.call: site for site in _library_sites(step).library_sites}
    assert set(sites) == {"GradScaler.step", "clip_grad_norm_"}
    scaler_site, clip_site = sites["GradScaler.step"], sites["clip_grad_norm_"]
    assert (scaler_site.kind, scaler_site.count, scaler_site.library, scaler_site.on_cuda) == ("item", 2, "torch.amp", True)
    assert scaler_site.operation == "GradScaler.step's inf/NaN check reads found_inf (.item())"
    assert (clip_site.kind, clip_site.library, clip_site.on_cuda) == ("__bool__", "torch.nn", True)
    assert clip_site.operation == "clip_grad_norm_(error_if_nonfinite=True) tests the total norm for inf/NaN"


def test_batch_norm_without_momentum_is_named_by_its_module_class():
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm1d(4, momentum=None)
    inputs = torch.randn(8, 4)
    (site,) = _library_sites(lambda: norm(inputs)).library_sites
    assert (site.call, site.library, site.on_cuda, site.count) == ("BatchNorm1d.forward", "torch.nn", True, 2)
    assert site.operation.startswith("batch norm with momentum=None reads num_batches_tracked")


def test_an_unknown_library_read_is_named_by_its_function_and_its_cuda_side_is_unknown():
    from torch.distributions.transforms import PowerTransform

    first, second = PowerTransform(torch.tensor(2.0)), PowerTransform(torch.tensor(2.0))
    (site,) = _library_sites(lambda: first == second).library_sites
    assert (site.call, site.library, site.on_cuda) == ("PowerTransform.__eq__", "torch.distributions", None)
    assert site.operation == "item in torch.distributions.transforms.PowerTransform.__eq__"
    assert site.cuda_note == "not known from a CPU count (only a CUDA run tells)"


def _line_of(text: str) -> int:
    return Path(__file__).read_text().splitlines().index(text) + 1
