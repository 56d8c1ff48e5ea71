"""VP602: gradient accumulation under DDP/FSDP/Accelerate without skipping the gradient sync,
only with evidence of the wrapper in the loop's own function, class or module."""

from __future__ import annotations

NESTED = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model.cuda(local_rank), device_ids=[local_rank])
for step in range(max_steps):
    for micro_step in range(accum_steps):
        x, y = get_batch("train")
        loss = model(x, y) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
"""


def test_nested_micro_batch_loop_under_ddp(analyse):
    assert analyse(NESTED, select=("VP602",)) == [("VP602", 9, "MEDIUM")]


def test_the_toggle_and_no_sync_are_the_correct_forms(analyse):
    toggled = NESTED.replace(
        "        loss = model(x, y)", "        model.require_backward_grad_sync = micro_step == accum_steps - 1\n        loss = model(x, y)"
    )
    assert analyse(toggled, select=("VP602",)) == []
    # A comment that mentions no_sync is not the correct form.
    commented = NESTED.replace("    optimizer.step()", "    # the official way is model.no_sync()\n    optimizer.step()")
    assert analyse(commented, select=("VP602",)) == [("VP602", 9, "MEDIUM")]


def test_without_a_wrapper_accumulation_is_not_reported(analyse):
    assert analyse(NESTED.replace("model = DDP(model.cuda(local_rank), device_ids=[local_rank])\n", ""), select=("VP602",)) == []


def test_a_wrapper_in_another_function_is_no_evidence(analyse):
    code = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel


    def build(model, rank):
        return DistributedDataParallel(model.cuda(rank), device_ids=[rank])


    def train(model, loader, optimizer, accum):
        for i, (x, y) in enumerate(loader):
            loss = model(x.cuda(), y.cuda()) / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
    """
    assert analyse(code, select=("VP602",)) == []


def test_a_trainer_class_wrapping_in_init_and_accumulating_in_a_method(analyse):
    code = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Trainer:
        def __init__(self, model, optimizer, rank, accum):
            self.model = DDP(model.to(rank), device_ids=[rank])
            self.optimizer = optimizer
            self.accum = accum

        def run_epoch(self, loader):
            for i, (x, y) in enumerate(loader):
                loss = self.model(x.cuda(), y.cuda()) / self.accum
                loss.backward()
                if (i + 1) % self.accum == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
    """
    assert analyse(code, select=("VP602",)) == [("VP602", 14, "MEDIUM")]


def test_fsdp2_and_accelerate_forms(analyse):
    code = """\
    from torch.distributed.fsdp import fully_shard


    def sharded(model, batches, optimizer, accum):
        fully_shard(model)
        for step in range(len(batches) // accum):
            for micro in range(accum):
                model(batches[step * accum + micro]).sum().backward()
            optimizer.step()
            optimizer.zero_grad()


    def sharded_toggled(model, batches, optimizer, accum):
        fully_shard(model)
        for step in range(len(batches) // accum):
            for micro in range(accum):
                model.set_requires_gradient_sync(micro == accum - 1)
                model(batches[step * accum + micro]).sum().backward()
            optimizer.step()
            optimizer.zero_grad()


    def accelerated(accelerator, model, optimizer, loader, accum):
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for step, batch in enumerate(loader):
            accelerator.backward(model(**batch).loss / accum)
            if (step + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
    """
    assert analyse(code, select=("VP602",)) == [("VP602", 8, "MEDIUM"), ("VP602", 26, "MEDIUM")]


def test_deepspeed_owns_its_accumulation_boundary(analyse):
    code = """\
    import deepspeed

    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        accelerator.backward(model(**batch).loss / accum)
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
    """
    assert analyse(code, select=("VP602",)) == []
