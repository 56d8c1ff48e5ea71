"""VP602 where the backward or the update sits in a function of its own: judged at the loop
that calls it, the same finding as when the step is written inline."""

from __future__ import annotations

SELECT = ("VP602",)

INLINE = """\
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    loss = model(batch).mean() / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""

BACKWARD_IN_A_FUNCTION = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def micro_step(batch):
    loss = model(batch).mean() / accum_steps
    loss.backward()


model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    micro_step(batch)
    if (step + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""

UPDATE_IN_A_FUNCTION = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def update(optimizer):
    optimizer.step()
    optimizer.zero_grad()


model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    loss = model(batch).mean() / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        update(optimizer)
"""

METHOD = """\
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model):
        self.model = DDP(model, device_ids=[local_rank])

    def micro_step(self, batch):
        (self.model(batch).mean() / self.accum_steps).backward()

    def fit(self, loader):
        for step, batch in enumerate(loader):
            self.micro_step(batch)
            if (step + 1) % self.accum_steps == 0:
                self.optimizer.step()
                self.optimizer.zero_grad()
"""


def test_the_inline_step_is_reported(analyse):
    assert analyse(INLINE, select=SELECT) == [("VP602", 6, "MEDIUM")]


def test_a_backward_in_a_function_the_loop_calls_is_reported_at_its_line(analyse):
    assert analyse(BACKWARD_IN_A_FUNCTION, select=SELECT) == [("VP602", 6, "MEDIUM")]


def test_an_update_in_a_function_called_on_the_cadence_still_makes_the_loop_accumulate(analyse):
    assert analyse(UPDATE_IN_A_FUNCTION, select=SELECT) == [("VP602", 12, "MEDIUM")]


def test_a_backward_in_a_method_the_loop_calls_is_reported(analyse):
    assert analyse(METHOD, select=SELECT) == [("VP602", 9, "MEDIUM")]


def test_no_sync_around_the_call_or_a_function_called_only_on_the_cadence_is_quiet(analyse):
    wrapped = BACKWARD_IN_A_FUNCTION.replace(
        "    micro_step(batch)\n", "    with model.no_sync():\n        micro_step(batch)\n"
    )
    assert analyse(wrapped, select=SELECT) == []
    on_cadence = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def step_once(batch):
    model(batch).mean().backward()
    optimizer.step()


model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    step_once(batch)
"""
    assert analyse(on_cadence, select=SELECT) == []


def test_a_method_call_named_like_the_modules_training_function_is_no_update(analyse):
    # `model.train()` after a periodic validation is not a call of this module's `train()`.
    code = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        model(batch).mean().backward()
        optimizer.step()
        if step % validation_interval == 0:
            validate(model)
            model.train()


model = DDP(model, device_ids=[local_rank])
train(model, loader, optimizer)
"""
    assert analyse(code, select=SELECT) == []
