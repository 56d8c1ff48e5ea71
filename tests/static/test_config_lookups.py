"""Settings looked up in a configuration with a literal default (`config_lookups.py`): a branch
the default keeps closed is opt-in, as under an argparse option's default, so a per-step cost
behind it is no proven per-step cost and does not block (ai-toolkit's profiler sync)."""

from __future__ import annotations

import pytest

SELECT = ("VP203",)

PROFILER = """\
import torch


class TrainProcess:
    def __init__(self, config):
        self.config = config
        do_profiler = self.get_conf("torch_profiler", False)
        self.torch_profiler = None if not do_profiler else torch.profiler.profile()

    def get_conf(self, key, default=None):
        return self.config.get(key, default)

    def run(self, model, loader, optimizer):
        model = model.cuda()
        for step, (x, y) in enumerate(loader):
            loss = model(x.cuda(non_blocking=True)).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if self.torch_profiler is not None:
                torch.cuda.synchronize()
                self.torch_profiler.step()
"""


def test_a_sync_behind_a_setting_the_configuration_defaults_off_is_opt_in(analyse):
    assert analyse(PROFILER, select=SELECT) == [("VP203", 21, "LOW")]


@pytest.mark.parametrize(
    "binding",
    [
        'self.torch_profiler = torch.profiler.profile() if self.get_conf("torch_profiler", True) else None',
        'self.torch_profiler = torch.profiler.profile() if config.get("torch_profiler", True) else None',
        'self.torch_profiler = torch.profiler.profile() if getattr(config, "torch_profiler", True) else None',
    ],
)
def test_a_setting_the_configuration_defaults_on_keeps_the_branch(analyse, binding):
    code = PROFILER.replace(
        '        do_profiler = self.get_conf("torch_profiler", False)\n'
        "        self.torch_profiler = None if not do_profiler else torch.profiler.profile()\n",
        f"        {binding}\n",
    )
    assert analyse(code, select=SELECT) == [("VP203", 20, "HIGH")]


def test_a_lookup_in_something_not_named_as_a_configuration_says_nothing(analyse):
    # `registry.get(...)` may be filled by anything: the branch stays as the test reads it.
    code = PROFILER.replace('self.get_conf("torch_profiler", False)', 'registry.get("torch_profiler", False)')
    assert analyse(code, select=SELECT) == [("VP203", 21, "HIGH")]


def test_an_attribute_bound_again_elsewhere_in_the_class_is_not_known(analyse):
    code = PROFILER.replace(
        "    def get_conf(self, key, default=None):",
        "    def start_profiling(self):\n        self.torch_profiler = torch.profiler.profile()\n\n"
        "    def get_conf(self, key, default=None):",
    )
    assert analyse(code, select=SELECT) == [("VP203", 24, "HIGH")]


def test_a_local_setting_read_with_a_literal_default_is_opt_in_too(analyse):
    code = """\
import torch


def train(model, loader, optimizer, cfg):
    sync_steps = cfg.get("sync_steps", False)
    model = model.cuda()
    for x, y in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
        optimizer.step()
        if sync_steps:
            torch.cuda.synchronize()
"""
    assert analyse(code, select=SELECT) == [("VP203", 11, "LOW")]


def test_a_call_of_anything_but_a_lookup_is_not_known(analyse):
    # `make_profiler()` may return None or a profiler: the branch stays as the test reads it.
    code = PROFILER.replace(
        "        self.torch_profiler = None if not do_profiler else torch.profiler.profile()\n",
        "        self.torch_profiler = make_profiler(do_profiler)\n",
    )
    assert analyse(code, select=SELECT) == [("VP203", 21, "HIGH")]


def test_a_name_bound_once_to_a_literal_holds_it(analyse):
    code = """\
import torch


def train(model, loader, optimizer):
    profiler = None
    model = model.cuda()
    for x, y in loader:
        model(x.cuda(non_blocking=True)).sum().backward()
        optimizer.step()
        if profiler is not None:
            torch.cuda.synchronize()
"""
    assert analyse(code, select=SELECT) == [("VP203", 11, "LOW")]
