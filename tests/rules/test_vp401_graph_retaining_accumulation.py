"""VP401: which accumulators outlive an iteration, and when a graph in them is intended."""

from __future__ import annotations

SELECT = ("VP401",)


def test_attribute_accumulator_in_a_method_called_every_step(analyse):
    code = """\
    import torch

    class Trainer:
        def __init__(self, model):
            self.model = model
            self.total = 0.0
            self.penalty = 0.0

        def fit(self, loader):
            self.model.train()
            for x, y in loader:
                self.train_step(x, y)

        def train_step(self, x, y):
            loss = criterion(self.model(x), y)
            self.penalty += self.model(x).pow(2).mean()
            loss.backward()
            self.total += loss
    """
    # The penalty's own forward is never backwarded: its activations stay alive every step. The
    # loss's are freed by its backward: the total only chains autograd nodes (hygiene).
    assert analyse(code, select=SELECT) == [("VP401", 16, "CRITICAL"), ("VP401", 18, "LOW")]


def test_a_graph_shown_by_names_only_never_blocks(analyse):
    code = """\
    total = 0.0
    for x, y in loader:
        loss = criterion(net(x), y)
        extra = net(x).sum()
        loss.backward()
        optimizer.step()
        total += extra
    """
    # `net` is a module only by its name: the value premise is assumed, so MEDIUM at most.
    assert analyse(code, select=SELECT) == [("VP401", 7, "MEDIUM")]


def test_an_unknown_decorator_may_turn_grad_off(analyse):
    code = """\
    import torch
    from utils import timed

    @timed()
    def evaluate(model, loader):
        model.eval()
        total = 0.0
        for x, y in loader:
            total += criterion(model(x), y)
        return total
    """
    # A decorator factory may return `torch.inference_mode()(fn)`: grad mode is assumed, not shown.
    assert analyse(code, select=SELECT) == [("VP401", 9, "MEDIUM")]


def test_a_wrapper_named_for_inference_mode_turns_grad_off(analyse):
    code = """\
    import torch
    from utils import smart_inference_mode, no_grad_wrapper

    @smart_inference_mode()
    def evaluate(model, loader):
        total = 0.0
        for x, y in loader:
            total += criterion(model(x), y)
        return total

    @no_grad_wrapper
    def score(model, loader):
        total = 0.0
        for x, y in loader:
            total += criterion(model(x), y)
        return total
    """
    assert analyse(code, select=SELECT) == []


def test_accumulation_where_every_caller_disables_grad_is_silent(analyse):
    code = """\
    import torch

    def score(model, loader):
        total = 0
        for x, y in loader:
            total += criterion(model(x), y)
        return total

    with torch.no_grad():
        score(model, val_loader)
    """
    assert analyse(code, select=SELECT) == []


def test_evaluation_loop_without_no_grad_is_both_vp404_and_vp401(analyse):
    code = """\
    import torch

    def validate(model, loader):
        model.eval()
        total = 0
        for x, y in loader:
            total += criterion(model(x), y)
        return total / len(loader)
    """
    # The accumulator keeps every batch's graph until the loop ends: an OOM risk VP404 alone does not block.
    assert analyse(code, select=("VP401", "VP404")) == [("VP401", 7, "CRITICAL"), ("VP404", 7, "MEDIUM")]


def test_per_step_sum_over_heads_is_not_an_accumulation_across_steps(analyse):
    code = """\
    import torch

    def heads_loss(x, y):
        total = 0
        for head in heads:
            total += criterion(head(x), y)
        return total

    for x, y in loader:
        loss = heads_loss(x, y)
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=SELECT) == []


def test_accumulator_backwarded_through_another_name_is_gradient_accumulation(analyse):
    code = """\
    import torch
    pending = 0
    for i, (x, y) in enumerate(loader):
        pending = pending + criterion(model(x), y)
        if (i + 1) % 4 == 0:
            mean_loss = pending / 4
            scaler.scale(mean_loss).backward()
            scaler.step(optimizer)
            scaler.update()
            pending = 0
    """
    assert analyse(code, select=SELECT) == []
