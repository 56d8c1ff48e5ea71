"""What the anti-patterns cost on the machine that runs this, so reports can cite a measured
impact. CPU numbers measure dispatch and memory traffic only; the host-device stall that
makes `.item()` and blocking copies expensive exists only with an accelerator, and those
variants run only where CUDA is present."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the host-device stall needs a CUDA device")

ROWS, WIDTH, BATCH = 10_000, 128, 256
STEPS = 50


@pytest.fixture(scope="module")
def table_and_indices():
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(ROWS, WIDTH, generator=generator)
    indices = torch.randint(0, ROWS, (BATCH,), generator=generator)
    return table, indices


@pytest.mark.benchmark(group="VP101-batching")
def test_batch_by_list_comprehension(benchmark, table_and_indices):
    table, indices = table_and_indices
    benchmark(lambda: torch.stack([table[i] for i in indices]))


@pytest.mark.benchmark(group="VP101-batching")
def test_batch_by_advanced_indexing(benchmark, table_and_indices):
    table, indices = table_and_indices
    benchmark(lambda: table[indices])


def make_steps(device: torch.device):
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(32, 64, device=device)
    targets = torch.randint(0, 8, (32,), device=device)

    def step() -> torch.Tensor:
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    def with_item_every_step() -> float:
        total = 0.0
        for _ in range(STEPS):
            total += step().item()
        return total

    def accumulate_on_device() -> float:
        total = torch.zeros((), device=device)
        for _ in range(STEPS):
            total += step()
        return total.item()

    return with_item_every_step, accumulate_on_device


@pytest.mark.benchmark(group="VP201-item-cpu")
def test_item_every_step_cpu(benchmark):
    benchmark(make_steps(torch.device("cpu"))[0])


@pytest.mark.benchmark(group="VP201-item-cpu")
def test_accumulate_on_device_cpu(benchmark):
    benchmark(make_steps(torch.device("cpu"))[1])


@pytest.mark.gpu
@needs_cuda
@pytest.mark.benchmark(group="VP201-item-cuda")
@pytest.mark.parametrize("variant", [0, 1], ids=["item-every-step", "accumulate-on-device"])
def test_item_cost_cuda(benchmark, variant):
    function = make_steps(torch.device("cuda"))[variant]
    benchmark(lambda: (function(), torch.cuda.synchronize()))


@pytest.mark.gpu
@needs_cuda
@pytest.mark.benchmark(group="VP102-copies-cuda")
@pytest.mark.parametrize("pinned", [False, True], ids=["pageable-blocking", "pinned-non-blocking"])
def test_host_to_device_copy(benchmark, pinned):
    batch = torch.randn(64, 1024, 256)
    if pinned:
        batch = batch.pin_memory()

    def copy() -> None:
        batch.to("cuda", non_blocking=pinned)
        torch.cuda.synchronize()

    benchmark(copy)
