"""What measuring costs: one reference step plain, and under the sync counter.

The counter runs in its own untimed pass; this tells how much slower that pass is.
"""

from __future__ import annotations

import pytest
import torch

from verifier.dynamic.sync_counter import SyncCounter
from verifier.reference_impl.presets import get_preset
from verifier.reference_impl.session import build_session

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


@pytest.fixture(scope="module")
def session():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    built = build_session(get_preset("tiny"), "fp32", torch.device("cpu"))
    for _ in range(5):
        built.step()
    yield built
    built.close()
    torch.set_num_threads(previous)


@pytest.mark.benchmark(group="harness-overhead")
def test_reference_step_plain(benchmark, session):
    benchmark(session.step)


@pytest.mark.benchmark(group="harness-overhead")
def test_reference_step_under_sync_counter(benchmark, session):
    def counted() -> None:
        with SyncCounter():
            session.step()

    benchmark(counted)
