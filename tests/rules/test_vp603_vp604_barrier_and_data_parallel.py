"""VP603: a barrier every step (MEDIUM: its cost depends on the launch), quiet per epoch, under an interval or behind a switch.
VP604: DataParallel, MEDIUM where the file trains, LOW in an inference script."""

from __future__ import annotations

BARRIER_LOOP = """\
import torch
import torch.distributed as dist
from torch.distributed import barrier


def sync_ranks():
    barrier()


for epoch in range(epochs):
    for step, (x, y) in enumerate(loader):
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        sync_ranks()
        if args.debug_sync:
            dist.barrier()
        if step % args.save_every == 0:
            dist.barrier()
            save(model, step)
        accelerator.wait_for_everyone()
    dist.barrier()
"""


def test_barriers_every_step_directly_and_through_a_helper(analyse):
    assert analyse(BARRIER_LOOP, select=("VP603",)) == [("VP603", 7, "MEDIUM"), ("VP603", 21, "MEDIUM")]


def test_barrier_once_per_evaluation_batch_is_not_reported(analyse):
    code = """\
    import torch
    import torch.distributed as dist


    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        for x, y in loader:
            outputs = model(x.cuda())
            dist.barrier()
    """
    assert analyse(code, select=("VP603",)) == []


def test_a_barrier_under_a_test_of_the_data_says_nothing_shown(analyse):
    # Its cost is assumed (it depends on the launch) and how often the branch is taken is not
    # known (a checkpoint on a signal, a change of the micro-batch count): nothing to report.
    code = BARRIER_LOOP.replace("        accelerator.wait_for_everyone()\n", "")
    code = code.replace("        if args.debug_sync:\n", "        if signal_received(handler):\n")
    assert analyse(code, select=("VP603",)) == [("VP603", 7, "MEDIUM")]


def test_data_parallel_in_training_and_in_inference(analyse):
    training = """\
    import torch
    from torch import nn

    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model = model.cuda()
    for x, y in loader:
        criterion(model(x.cuda()), y.cuda()).backward()
        optimizer.step()
    """
    inference = """\
    import torch

    model = torch.nn.parallel.DataParallel(model, device_ids=[0, 1]).cuda().eval()
    with torch.no_grad():
        outputs = [model(x.cuda()) for x in loader]
    """
    assert analyse(training, select=("VP604",)) == [("VP604", 5, "MEDIUM")]
    assert analyse(inference, name="infer.py", select=("VP604",)) == [("VP604", 3, "LOW")]


def test_functional_data_parallel_takes_the_heat_of_its_call(analyse):
    code = """\
    import torch
    from torch.nn.parallel import data_parallel

    for x, y in loader:
        out = data_parallel(model, x.cuda(), device_ids=[0, 1])
        criterion(out, y.cuda()).backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP604",)) == [("VP604", 5, "MEDIUM")]


def test_a_project_subclass_of_data_parallel_replicates_all_the_same(analyse):
    # YOLACT's shape: a DataParallel that gathers its own outputs, wrapping the model and loss.
    code = """\
    import torch
    import torch.nn as nn

    class GatherLists(nn.DataParallel):
        def gather(self, outputs, output_device):
            return sum(outputs, [])

    class Quiet(GatherLists):
        pass

    net = GatherLists(Net().cuda())
    other = Quiet(Net().cuda())
    for x, y in loader:
        loss = net(x.cuda()).sum()
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP604",)) == [("VP604", 11, "MEDIUM"), ("VP604", 12, "MEDIUM")]
    # A class of the project's own (not a DataParallel) is nothing to report.
    assert analyse(code.replace("(nn.DataParallel)", "(nn.Module)"), select=("VP604",)) == []
