"""A function handed to a process or thread launcher (`mp.spawn(worker, nprocs=n)`,
`Process(target=worker)`) is that process's main: it runs once per process where the launch is.
Before, nothing called it, and a function nobody calls that steps an optimizer is taken for a
step a framework runs every step."""

from __future__ import annotations

import pytest

WORKER = """\
import torch
{imports}


def worker(rank, world_size):
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]]).to("cuda")
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    print(loss.item())
    for x, y in loader:
        step_loss = model(x.cuda()).sum()
        step_loss.backward()
        optimizer.step()
        print(step_loss.item())


def main():
    {launch}


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    ("imports", "launch"),
    [
        ("import torch.multiprocessing as mp", "mp.spawn(worker, args=(2,), nprocs=2, join=True)"),
        ("from torch.multiprocessing import spawn", "spawn(fn=worker, args=(2,), nprocs=2)"),
        ("import multiprocessing", "multiprocessing.Process(target=worker, args=(0, 1)).start()"),
    ],
    ids=["mp.spawn", "spawn-keyword", "Process-target"],
)
def test_a_launched_function_runs_once_and_its_own_loop_every_step(analyse, imports, launch):
    code = WORKER.format(imports=imports, launch=launch)
    # The one demonstration step is once (nothing); the loop inside the worker is per step.
    assert analyse(code, select=("VP104", "VP201")) == [("VP201", 17, "MEDIUM")]


def test_a_step_function_nobody_calls_is_still_a_framework_s_step(analyse):
    code = WORKER.format(imports="", launch="pass")
    assert analyse(code, select=("VP104", "VP201")) == [
        ("VP104", 8, "MEDIUM"), ("VP201", 12, "MEDIUM"), ("VP201", 17, "MEDIUM")
    ]
