"""Heat follows a step to its code through every way Python calls it: a callback handed in as an
argument, an alias, `functools.partial`, `getattr` with a literal name, a context manager, a
lambda bound to a name, a method of an instance made at the call (`Trainer().hook(loss)`)."""

from __future__ import annotations

SELECT = ("VP203",)

TRAINER = """\
import functools
import torch

class Probe:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()

def on_step(loss):
    torch.cuda.synchronize()

def logged(writer, loss):
    torch.cuda.synchronize()

def plain(loss):
    torch.cuda.synchronize()

class Trainer:
    def hook(self, loss):
        torch.cuda.synchronize()

    def fit(self, loader, callback):
        alias = plain
        part = functools.partial(logged, None)
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            {call}

trainer = Trainer()
trainer.fit(loader, on_step)
"""


def test_each_way_of_calling_carries_the_step_heat(analyse):
    for call, line in [
        ("callback(loss)", 12),
        ("alias(loss)", 18),
        ("part(loss)", 15),
        ('getattr(self, "hook")(loss)', 22),
        ("with Probe():\n                pass", 9),
        ("sync = lambda: torch.cuda.synchronize()\n            sync()", 31),
        # A method of an instance made right at the call.
        ("Trainer().hook(loss)", 22),
    ]:
        assert analyse(TRAINER.format(call=call), select=SELECT) == [("VP203", line, "HIGH")], call


def test_a_callback_nobody_calls_per_step_stays_cold(analyse):
    code = TRAINER.format(call="pass")
    assert analyse(code, select=SELECT) == []


def test_a_dispatcher_handed_several_callbacks_and_a_list_of_them_reach_each(analyse):
    code = """\
    import functools as ft
    import torch

    def first(loss):
        torch.cuda.synchronize()

    def second(loss):
        torch.cuda.synchronize()

    def third(loss):
        torch.cuda.synchronize()

    def tagged(tag, loss):
        torch.cuda.synchronize()

    def invoke(callback, loss):
        callback(loss)

    def fit(loader):
        hooks = [second, third]
        part = ft.partial(tagged, "x")
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            invoke(first, loss)
            invoke(second, loss)
            for hook in hooks:
                hook(loss)
            part(loss)
    """
    assert analyse(code, select=SELECT) == [
        ("VP203", 5, "HIGH"), ("VP203", 8, "HIGH"), ("VP203", 11, "HIGH"), ("VP203", 14, "HIGH"),
    ]


LAMBDAS = """\
import torch

def train(loader, every):
    read = lambda t: t.item()
    for step, x in enumerate(loader):
        loss = model(x.cuda()).sum()
        loss.backward()
        optimizer.step()
        {call}
"""


def test_a_named_lambda_runs_at_the_heat_of_its_calls_not_of_its_definition(analyse):
    # Defined once before the loop, called every step: the read in its body is per step, and the
    # loss handed to it is the device tensor of the call site.
    assert analyse(LAMBDAS.format(call="read(loss)"), select=("VP201",)) == [("VP201", 4, "MEDIUM")]
    # Called under a rate limit: the body runs every 100 steps.
    assert analyse(LAMBDAS.format(call="if step % 100 == 0:\n            read(loss)"), select=("VP201",)) == []


def test_an_alias_of_a_bound_sync_method_or_of_a_process_spawn_is_that_call(analyse):
    code = """\
    import subprocess as sp
    import torch

    def train(loader):
        wait = torch.cuda.Event().synchronize
        drain = torch.cuda.current_stream().synchronize
        spawn = sp.run
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            optimizer.step()
            wait()
            drain()
            spawn(["nvidia-smi"])
    """
    # A stream or event sync waits only for the work its stream or event covers: its cost is assumed.
    assert analyse(code, select=("VP203", "VP204")) == [("VP203", 12, "MEDIUM"), ("VP203", 13, "MEDIUM"), ("VP204", 14, "HIGH")]


METHOD_REFERENCE = """\
import torch


class Decoder(torch.nn.Module):
    def forward_old(self, x):
        torch.cuda.synchronize()
        return self.net(x).sum()

    def forward(self, x):
        return self.net(x).sum()


class Runner:
    def __init__(self):
        self.model = Decoder().cuda()

    def fit(self, loader, optimizer, new_forward):
        for x in loader:
            {bind}
            loss = forward(x.cuda())
            loss.backward()
            optimizer.step()
"""


def test_a_method_named_without_a_call_runs_where_the_name_is_called(analyse):
    # `forward = self.model.forward_old` (or one of two methods by a flag): the call through the
    # name runs the method of the class the attribute holds.
    for bind in (
        "forward = self.model.forward_old",
        "forward = self.model.forward if new_forward else self.model.forward_old",
    ):
        assert analyse(METHOD_REFERENCE.format(bind=bind), select=SELECT) == [("VP203", 6, "HIGH")], bind
    # The other method is the one the name holds: nothing runs the synchronize.
    assert analyse(METHOD_REFERENCE.format(bind="forward = self.model.forward"), select=SELECT) == []
