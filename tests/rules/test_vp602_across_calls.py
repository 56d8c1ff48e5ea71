"""VP602 where the backward or the update sits in a function of its own: judged at the loop
that calls it, the same finding as when the step is written inline."""

from __future__ import annotations

from tests.static.test_cross_module_heat import findings, write

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


CADENCE_IN_A_FUNCTION = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(batch, step):
    loss = model(batch).mean() / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()


model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    train_step(batch, step)
"""

UPDATE_THROUGH_AN_INSTANCE = """\
from torch.nn.parallel import DistributedDataParallel as DDP


class Updater:
    def run(self, optimizer):
        optimizer.step()
        optimizer.zero_grad()


model = DDP(model, device_ids=[local_rank])
for step, batch in enumerate(loader):
    loss = model(batch).mean() / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        Updater().run(optimizer)
"""

MICRO_BATCH_LOOP_IN_A_FUNCTION = """\
from torch.nn.parallel import DistributedDataParallel as DDP


def train_step(micro_batches):
    for batch in micro_batches:
        (model(batch).mean() / len(micro_batches)).backward()
    optimizer.step()
    optimizer.zero_grad()


model = DDP(model, device_ids=[local_rank])
for micro_batches in loader:
    train_step(micro_batches)
"""


def test_a_function_that_steps_on_the_cadence_makes_the_loop_calling_it_accumulate(analyse):
    """The whole inline body moved into a function: the same finding, at the backward."""
    assert analyse(CADENCE_IN_A_FUNCTION, select=SELECT) == [("VP602", 6, "MEDIUM")]


def test_an_update_in_a_method_of_an_instance_made_at_the_call_is_an_update(analyse):
    assert analyse(UPDATE_THROUGH_AN_INSTANCE, select=SELECT) == [("VP602", 13, "MEDIUM")]


def test_a_function_that_loops_over_micro_batches_and_steps_once_accumulates(analyse):
    assert analyse(MICRO_BATCH_LOOP_IN_A_FUNCTION, select=SELECT) == [("VP602", 6, "MEDIUM")]


UPDATE_IN_ANOTHER_MODULE = {
    "update.py": """\
def apply_update(optimizer, scheduler):
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
""",
    "train.py": """\
from update import apply_update

model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
for step, batch in enumerate(loader):
    loss = model(**batch).loss / accum_steps
    accelerator.backward(loss)
    if step % accum_steps == 0:
        apply_update(optimizer, scheduler)
""",
}


def test_an_update_in_a_function_of_another_module_called_on_the_cadence_accumulates(tmp_path):
    # The project pass knows `apply_update` steps the optimizer: the loop that calls it on the
    # cadence accumulates as if the update were written there (the same finding as inline).
    write(tmp_path, UPDATE_IN_ANOTHER_MODULE)
    assert findings(tmp_path, SELECT) == [("train.py", "VP602", 6, "MEDIUM", "step")]


def test_a_function_of_another_module_that_does_not_step_makes_no_cadence(tmp_path):
    write(tmp_path, {**UPDATE_IN_ANOTHER_MODULE, "update.py": "def apply_update(optimizer, scheduler):\n    print(optimizer)\n"})
    assert findings(tmp_path, SELECT) == []
