"""VP602 rests on the accumulation factor exceeding 1: shown by a literal, assumed from settings,
unknown when the default run keeps it at 1."""

from __future__ import annotations

SELECT = ("VP602",)

ACCELERATE_EXAMPLE = """\
from accelerate import Accelerator

def training_function(config, args):
    accelerator = Accelerator()
    batch_size = int(config["batch_size"])
    {factor}
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / gradient_accumulation_steps
        accelerator.backward(loss)
        if step % gradient_accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_factor_raised_only_under_a_condition_is_unknown(analyse):
    factor = (
        "gradient_accumulation_steps = 1\n"
        "    if batch_size > MAX_GPU_BATCH_SIZE:\n"
        "        gradient_accumulation_steps = batch_size // MAX_GPU_BATCH_SIZE"
    )
    # The default run never accumulates: LOW, never a MEDIUM claim about every run.
    assert analyse(ACCELERATE_EXAMPLE.format(factor=factor), select=SELECT) == [("VP602", 12, "LOW")]


def test_a_factor_from_the_settings_is_assumed(analyse):
    factor = "gradient_accumulation_steps = args.gradient_accumulation_steps"
    assert analyse(ACCELERATE_EXAMPLE.format(factor=factor), select=SELECT) == [("VP602", 10, "MEDIUM")]


def test_a_literal_factor_is_shown(analyse):
    code = """\
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(model, device_ids=[local_rank])
    for step in range(max_steps):
        for micro_step in range(4):
            loss = model(*get_batch()) / 4
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    """
    assert analyse(code, select=SELECT) == [("VP602", 8, "MEDIUM")]


OPTION_EXAMPLE = """\
import argparse

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("--accumulation_steps", type=int, default={default})
args = parser.parse_args()
model = DDP(model, device_ids=[local_rank])
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.cuda()), y.cuda()) / args.accumulation_steps
    loss.backward()
    if (step + 1) % args.accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""


def test_an_option_whose_default_is_one_leaves_the_factor_unknown(analyse):
    # `--accumulation_steps` defaults to 1: a user may raise it, the run as shipped does not.
    assert analyse(OPTION_EXAMPLE.format(default=1), select=SELECT) == [("VP602", 12, "LOW")]
    assert analyse(OPTION_EXAMPLE.format(default=8), select=SELECT) == [("VP602", 12, "MEDIUM")]
