"""The reference runs as DDP under torchrun: gloo on CPU here, NCCL on CUDA machines."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch


def torchrun(nproc: int, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    command += ["-m", "verifier.reference_impl", "--preset", "tiny", *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"torchrun did not finish in 300 s; stderr tail:\n{(timeout.stderr or b'')[-2000:]!r}")


def test_two_process_gloo_run_trains_and_averages_across_ranks():
    finished = torchrun(2, "--mode", "fp32", "--device", "cpu", "--steps", "20", "--log-interval", "10")

    assert finished.returncode == 0, finished.stderr[-2000:]
    lines = finished.stdout.splitlines()
    # Only rank 0 prints, once.
    assert sum("world size 2" in line for line in lines) == 1
    losses = [float(line.split()[-1]) for line in lines if line.startswith("step ")]
    assert len(losses) == 2 and losses[1] < losses[0]
    assert any(line.startswith("eval loss") for line in lines)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_process_nccl_run():
    finished = torchrun(2, "--mode", "bf16", "--device", "cuda", "--steps", "20")
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "device cuda:0" in finished.stdout
