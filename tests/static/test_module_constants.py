"""A script's own switch: a module-level name bound once to a literal (`HF_MODE = False`) and
never again holds that literal wherever the module reads it, as an option holds its default. A
branch it keeps the walk out of is opt-in; a name bound anywhere else is not a constant."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.static.cli_defaults import CommandLine, module_constants

SCRIPT = """\
HF_MODE = False
TOP_P = 0.0
NAME = "gpt2"
steps = 10  # rebound below
LIMIT = 3


def f(LIMIT):
    return LIMIT


for i in range(steps):
    steps = steps - 1
"""


def test_only_names_bound_once_to_a_literal_are_constants():
    assert module_constants(SCRIPT) == {"HF_MODE": False, "TOP_P": 0.0, "NAME": "gpt2"}


@pytest.mark.parametrize(
    ("test", "held"),
    [
        ("HF_MODE", False),
        ("not HF_MODE", True),
        ("TOP_P > 0", False),
        ("NAME == 'gpt2'", True),
        ("steps > 5", None),
        ("LIMIT > 1", None),
        ("HF_MODE and other", False),
        ("other", None),
    ],
)
def test_a_test_of_module_constants_is_evaluated_in_three_values(test, held):
    assert CommandLine(SCRIPT).holds_by_default(cst.parse_expression(test)) is held


CODE = """\
import torch

HF_MODE = {value}

model = Net().cuda()
for x, y in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
    if HF_MODE:
        print(loss.item())
"""


def test_a_read_behind_a_switch_the_module_turns_off_is_opt_in(analyse):
    # Off as shipped: the frequency is unknown (LOW); on, the read runs every step (MEDIUM).
    assert analyse(CODE.format(value="False"), select=("VP201",)) == [("VP201", 11, "LOW")]
    assert analyse(CODE.format(value="True"), select=("VP201",)) == [("VP201", 11, "MEDIUM")]
    # Rebound by a function (`global`), it is no constant: the branch is run-constant, MEDIUM.
    rebound = CODE.format(value="False") + "\n\ndef enable():\n    global HF_MODE\n    HF_MODE = True\n"
    assert analyse(rebound, select=("VP201",)) == [("VP201", 11, "MEDIUM")]


@pytest.mark.parametrize(
    "override",
    ["exec(open('configurator.py').read())", "globals()['HF_MODE'] = True", "vars().update(overrides)"],
    ids=["exec-configurator", "globals", "vars"],
)
def test_a_module_that_can_set_its_globals_by_name_has_no_constants(override):
    # nanoGPT's configurator: `exec(open('configurator.py').read())` overrides the globals.
    assert module_constants(SCRIPT + override + "\n") == {}


LOGGED = """\
import torch

log_interval = {interval}

model = Net().cuda()
for iter_num in range(max_iters):
    loss = model(next_batch().cuda()).sum()
    loss.backward()
    optimizer.step()
    if iter_num % log_interval == 0:
        print(loss.item())
"""


def test_a_log_test_modulo_a_setting_of_one_holds_every_step(analyse):
    # lit-llama's `log_interval = 1`: the test holds every iteration, so the read runs every step
    # (before: a test "that depends on the data", frequency unknown, LOW).
    assert analyse(LOGGED.format(interval=1), select=("VP201",)) == [("VP201", 11, "MEDIUM")]
    # A real interval is a rate limit: nothing per step.
    assert analyse(LOGGED.format(interval=100), select=("VP201",)) == []
