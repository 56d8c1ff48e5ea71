"""What the implicit syncs of VP205, VP206 and VP502 cost in work that the CPU can show.

On CPU nothing waits for a device: these numbers measure only the extra work (the count pass
of a boolean mask, the Python-level formatting of a tensor, reading 0-d tensors one by one).
On a GPU each of the eager forms also drains the queue, which only a device run can show.
"""

from __future__ import annotations

import logging

import pytest
import torch

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

ELEMENTS = 1 << 20
SCALARS = 16


@pytest.fixture(scope="module")
def values():
    return torch.randn(ELEMENTS, generator=torch.Generator().manual_seed(0))


@pytest.mark.benchmark(group="VP205-mask")
def test_boolean_mask_indexing(benchmark, values):
    benchmark(lambda: values[values > 0].sum())


@pytest.mark.benchmark(group="VP205-mask")
def test_where_masking(benchmark, values):
    benchmark(lambda: torch.where(values > 0, values, 0.0).sum())


@pytest.fixture(scope="module")
def rows_and_repeats():
    generator = torch.Generator().manual_seed(0)
    rows = torch.randn(4096, 64, generator=generator)
    repeats = torch.randint(1, 4, (4096,), generator=generator)
    return rows, repeats, int(repeats.sum())


@pytest.mark.benchmark(group="VP205-repeat-interleave")
def test_repeat_interleave_size_from_data(benchmark, rows_and_repeats):
    rows, repeats, _ = rows_and_repeats
    benchmark(lambda: rows.repeat_interleave(repeats, dim=0))


@pytest.mark.benchmark(group="VP205-repeat-interleave")
def test_repeat_interleave_with_output_size(benchmark, rows_and_repeats):
    rows, repeats, total = rows_and_repeats
    benchmark(lambda: rows.repeat_interleave(repeats, dim=0, output_size=total))


@pytest.fixture(scope="module")
def scalars():
    return [torch.tensor(float(i)) for i in range(SCALARS)]


@pytest.mark.benchmark(group="VP206-tensor-of-scalars")
def test_tensor_from_list_of_tensors(benchmark, scalars):
    benchmark(lambda: torch.tensor(scalars))


@pytest.mark.benchmark(group="VP206-tensor-of-scalars")
def test_stack_of_tensors(benchmark, scalars):
    benchmark(lambda: torch.stack(scalars))


@pytest.fixture
def quiet_logger():
    logger = logging.getLogger("verify-perf-bench")
    previous = logger.level
    logger.setLevel(logging.WARNING)
    yield logger
    logger.setLevel(previous)


@pytest.mark.benchmark(group="VP502-log-level-off")
def test_eager_fstring_of_tensor(benchmark, quiet_logger):
    loss = torch.tensor(0.25)
    benchmark(lambda: quiet_logger.debug(f"loss {loss}"))


@pytest.mark.benchmark(group="VP502-log-level-off")
def test_lazy_percent_args(benchmark, quiet_logger):
    loss = torch.tensor(0.25)
    benchmark(lambda: quiet_logger.debug("loss %s", loss))
