"""Which tests make an `if` a rate-limit guard (code under it runs every N steps, not every step)."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.static.guards import is_rate_limit
from verifier.static.names import ImportTable


def _imports() -> ImportTable:
    imports = ImportTable()
    imports.add(cst.parse_statement("import time").body[0])
    return imports


@pytest.mark.parametrize(
    "test",
    [
        "step % log_every == 0",
        "(i + 1) % args.log_interval == 0 and rank == 0",
        "not global_step % 100",
        "batch_idx == len(loader) - 1",
        "i == 0",
        "should_log",
        "self.control.should_save",  # a trainer's interval flags, set by its callbacks
        "self.control.should_evaluate",
        "step_is_print_step(step)",
        "time.time() - last_log > 30",
        "0 <= step <= 2",
        "1 < num_shown < 5",
        "cur_nimg < tick_start_nimg + kimg_per_tick * 1000",
        "step >= last_log_step + log_every",
        "self.cuda and self.get_num_updates() == 0",
        "trainer.get_global_step() == 1",
    ],
)
def test_rate_limits(test):
    assert is_rate_limit(cst.parse_expression(test), _imports())


@pytest.mark.parametrize("test", ["verbose", "rank == 0", "logger is not None", "loss > best", "epoch > warmup", "0 <= step < limit", "lo < loss < 2", "loss < best + margin", "self.get_lr() == 0", "get_num_updates(model) == 0"])
def test_not_rate_limits(test):
    assert not is_rate_limit(cst.parse_expression(test), _imports())


def _vp201_lines(code: str) -> list[int]:
    from verifier.config import Settings
    from verifier.rules import rule_by_selector
    from verifier.static.engine import analyze_source
    from verifier.static.source import decode_source

    analysis = analyze_source("train.py", decode_source(code.encode()), rule_by_selector("VP201"), Settings())
    return [f.line for f in analysis.findings]


def test_a_guard_covers_its_body_not_its_own_test_nor_its_else():
    code = """\
import torch
device = "cuda"
for step, (x, y) in enumerate(loader):
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
    loss.backward()
    if step % 10 == 0 and loss.item() > 4.0:
        print(loss.item())
    else:
        print(loss.item())
    if step % 10:
        continue
    print(loss.item())
"""
    assert _vp201_lines(code) == [7, 10]


def test_a_function_called_under_a_rate_limit_guard_runs_periodically_not_per_step():
    from verifier.config import Settings
    from verifier.findings import Heat
    from verifier.rules import rule_by_selector
    from verifier.static.engine import analyze_source
    from verifier.static.source import decode_source

    code = """\
import torch
device = "cuda"

def log_metrics(loss):
    print(loss.item())

def check(loss):
    print(loss.item())

for step, (x, y) in enumerate(loader):
    x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    check(loss)
    if step % 100 == 0:
        log_metrics(loss)
"""
    analysis = analyze_source("train.py", decode_source(code.encode()), rule_by_selector("VP201"), Settings())
    assert {f.line: f.heat for f in analysis.findings} == {8: Heat.STEP}


def test_a_first_steps_chain_quiets_per_env_reads_in_a_rollout():
    code = """\
import torch
device = "cuda"
for update in range(num_updates):
    for step in range(num_steps):
        action = policy(obs.to(device)).sample()
        obs, reward, done, info = envs.step(action)
        if 0 <= step <= 2:
            for idx, d in enumerate(done):
                print(info["r"][idx].item())
        loss = policy.loss(obs)
        loss.backward()
        optimizer.step()
        total += loss.item()
"""
    assert _vp201_lines(code) == [13]


FLAGS = """\
import torch

def train(loader, every, last):
    verbose = False
    for i, (x, y) in enumerate(loader):
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        is_console_step = (i % every == 0) or i == last
        is_metric_step = (i % 10 == 0) or is_console_step
        log_now = is_metric_step
        if is_metric_step:
            print(loss.item())
        if log_now and not verbose:
            print(loss.item())
        flag = True
        if flag:
            print(loss.item())
"""


def test_a_flag_bound_to_a_rate_limit_is_that_rate_limit(analyse):
    # `if is_metric_step:` runs as often as the modulo it was bound to, also through a copy of
    # it; a flag bound to True is no rate limit.
    assert analyse(FLAGS, select=("VP201",)) == [("VP201", 18, "MEDIUM")]



def test_debug_code_a_compiled_graph_leaves_out_is_not_reported(analyse):
    code = """\
    import torch

    model = torch.compile(model.cuda())
    for x in loader:
        out = model(x.cuda())
        if not torch.compiler.is_compiling():
            print("norm", out.norm().item())
        out.sum().backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP201",)) == []


def test_an_interval_of_one_is_no_rate_limit():
    assert not is_rate_limit(cst.parse_expression("(i + 1) % 1 == 0"), _imports())
    # The same interval from an option whose default is 1: the test holds every step.
    is_one = lambda node: cst.Module(body=()).code_for_node(node) == "args.log_steps"  # noqa: E731
    assert not is_rate_limit(cst.parse_expression("(i + 1) % args.log_steps == 0"), _imports(), is_one)
    assert is_rate_limit(cst.parse_expression("(i + 1) % args.log_steps == 0"), _imports())


LOG_STEPS = """
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--log_steps", type=int, default={default})
args = parser.parse_args()
device = torch.device("cuda")

def train(model, loader, optimizer):
    for i, batch in enumerate(loader):
        optimizer.zero_grad()
        loss = model(batch.to(device)).sum()
        loss.backward()
        optimizer.step()
        if (i + 1) % args.log_steps == 0:
            print(f"loss {{loss:.4f}}")
"""


# With the default of 1 the test holds on every step of the default run: the read is per step.
@pytest.mark.parametrize(("default", "expected"), [(1, [("VP201", 17, "MEDIUM")]), (100, [])])
def test_a_logging_interval_whose_default_is_one_logs_every_step(analyse, default, expected):
    assert analyse(LOG_STEPS.format(default=default), select=("VP201",)) == expected


FOLDS = """\
import torch
device = "cuda"
for i in range(folds):
    train(i)
    for step, batch in enumerate(test_dataloader):
        with torch.no_grad():
            predictions = model(batch.to(device))
        fold_predictions.append(predictions.cpu())
        if {test}:
            references.append(batch.to(device).cpu())
"""


def test_a_test_of_an_outer_loops_counter_is_no_rate_limit_of_the_loader_loop(analyse):
    # Within the loop over the test loader, the fold index `i == 0` holds on every batch or on none.
    assert analyse(FOLDS.format(test="i == 0"), select=("VP201",)) == [
        ("VP201", 8, "LOW"), ("VP201", 10, "LOW"),
    ]
    # The loader loop's own counter is still a rate limit.
    assert analyse(FOLDS.format(test="step == 0"), select=("VP201",)) == [("VP201", 8, "LOW")]


def test_over_the_parts_of_one_step_the_outer_index_is_the_steps_counter(analyse):
    code = """\
    import torch
    device = "cuda"
    for i, batch in enumerate(train_loader):
        for chunk in batch.to(device).chunk(4):
            loss = model(chunk).mean()
            loss.backward()
            if i % 100 == 0:
                print(loss.item())
        optimizer.step()
    """
    assert analyse(code, select=("VP201",)) == []


def test_maintenance_after_a_hand_kept_interval_runs_once_per_period(analyse):
    # `continue` until the period is over: what follows runs once per period, not every step.
    code = """\
    import torch
    device = "cuda"
    tick_start = 0
    step = 0
    while True:
        loss = model(next(batches).to(device)).mean()
        loss.backward()
        optimizer.step()
        step += 1
        if step < tick_start + steps_per_tick:
            continue
        print(f"loss {loss.item():.3f}")
        tick_start = step
    """
    assert analyse(code, select=("VP201",)) == []
    every_step = code.replace("if step < tick_start + steps_per_tick:", "if loss.isnan().any():")
    # The data-dependent test reads the device every step; the print right after it costs little more.
    assert analyse(every_step, select=("VP201",)) == [("VP201", 10, "MEDIUM"), ("VP201", 12, "LOW")]


SCRIPT_SETTINGS = """\
import torch

log_interval = {interval}
model = torch.nn.Linear(4, 4).cuda()
for iter_num, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
    if iter_num % log_interval == 0:
        lossf = loss.item()
"""


@pytest.mark.parametrize(("interval", "expected"), [("1", [("VP201", 10, "MEDIUM")]), ("10", [])])
def test_a_scripts_module_level_interval_of_one_logs_every_step(analyse, interval, expected):
    # A training script's settings at its top (overridable by a config file): with
    # `log_interval = 1` the default run reads the loss every step.
    assert analyse(SCRIPT_SETTINGS.format(interval=interval), select=("VP201",)) == expected


def test_a_setting_bound_twice_is_not_known_to_be_one(analyse):
    code = SCRIPT_SETTINGS.format(interval="1").replace(
        "model = torch", "if fast:\n    log_interval = 100\nmodel = torch"
    )
    assert analyse(code, select=("VP201",)) == []
