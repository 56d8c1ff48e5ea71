"""A tensor every caller hands a helper is a tensor in the helper (and on the accelerator when
the callers show it): `float(loss)` in `log_loss(loss)` is a read like `loss.item()`."""

from __future__ import annotations

import pytest

SELECT = ("VP201",)

STEP = """\
import torch

def log_loss(loss):
    value = float(loss)
    return value

device = "cuda"
model.to(device)
for x, y in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    optimizer.step()
    log_loss(loss)
{elsewhere}
"""


@pytest.mark.parametrize(
    ("elsewhere", "expected"),
    [
        ("", [("VP201", 4, "MEDIUM")]),
        # One caller hands a number: `loss` is not known to be a tensor, and `float()` of a number is no read.
        ("log_loss(0.5)", []),
    ],
    ids=["every-caller-hands-a-device-tensor", "a-caller-hands-a-number"],
)
def test_a_helper_reads_what_its_callers_hand_it(analyse, elsewhere, expected):
    assert analyse(STEP.format(elsewhere=elsewhere), select=SELECT) == expected


def test_a_loss_made_by_a_library_function_reaches_a_helper_in_another_module(tmp_path):
    """`loss = F.nll_loss(...)` is a device tensor at the call site; the helper module's parameter
    gets that fact, so every value read of it there is a per-step read (not "value unknown")."""
    import textwrap

    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "probes.py").write_text(textwrap.dedent("""\
        def show(loss):
            print(f"{loss}")

        def check(loss):
            if bool(loss > 0):
                pass
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F
        from probes import check, show

        device = torch.device("cuda")
        model.to(device)
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            show(loss)
            check(loss)
    """))
    result = analyze_paths([str(tmp_path)], Settings(select=SELECT))
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name, f.heat.label) for f in result.findings] == [
        ("probes.py", 2, "MEDIUM", "step"),
        ("probes.py", 5, "MEDIUM", "step"),
    ]


@pytest.mark.parametrize(
    "binding",
    ["logits, loss = model(x.cuda(), y.cuda())", "logits, self.loss = model(x.cuda(), y.cuda())"],
    ids=["unpacked-local", "unpacked-attribute"],
)
def test_an_unpacked_loss_a_backward_ran_on_reaches_the_helper(analyse, binding):
    # The project pass cannot say what `model(x, y)` returns; the walk knows a backward ran on the
    # loss, and that is what the helper's parameter receives.
    loss = "self.loss" if "self.loss" in binding else "loss"
    code = f"""\
    import torch

    def log(loss):
        print(f"{{loss}}")

    class Trainer:
        def run(self, model, loader):
            model.cuda()
            for x, y in loader:
                {binding}
                {loss}.backward()
                self.optimizer.step()
                log({loss})
    """
    assert analyse(code, select=SELECT) == [("VP201", 4, "MEDIUM")]


def test_getattr_with_a_literal_hands_its_arguments_to_the_method(analyse):
    # `getattr(runner, "show")(loss)` is `runner.show(loss)`: `loss` is the method's first
    # parameter after `self`, not `self`.
    code = """\
    import torch

    class Runner:
        def show(self, loss):
            print(f"{loss}")

    def train(model, loader):
        runner = Runner()
        model.cuda()
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            getattr(runner, "show")(loss)
    """
    assert analyse(code, select=SELECT) == [("VP201", 5, "MEDIUM")]


def test_a_finding_that_a_bound_fact_makes_has_the_lines_of_its_trace(tmp_path):
    # The read in `log_loss` is a finding only once the project pass binds the device loss to its
    # parameter; its heat trace still names the call and the loop by line.
    import textwrap

    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "train.py").write_text(textwrap.dedent(STEP.format(elsewhere="")))
    [finding] = analyze_paths([str(tmp_path)], Settings(select=SELECT)).findings
    assert [(step.line, step.what) for step in finding.heat_trace] == [
        (13, "calls log_loss()"), (9, "step loop: iterates loader, calls optimizer.step()"),
    ]


def test_a_loader_batch_moved_to_the_device_reaches_a_modules_forward(analyse):
    code = """\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    class Attention(nn.Module):
        def forward(self, queries, keys):
            if queries.sum() > 0:
                pass
            return queries

    def train(loader, optimizer):
        attn = Attention().cuda()
        for q, k in loader:
            q = q.cuda(non_blocking=True)
            loss = attn(q, k).sum()
            loss.backward()
            optimizer.step()

    train(DataLoader(dataset, batch_size=8), optimizer)
    """
    # `q` is one of the loader's batches, moved onto the accelerator: the forward's `queries` is a
    # device tensor at every call, so its test waits for the device (proven, MEDIUM).
    assert analyse(code, select=SELECT) == [("VP201", 7, "MEDIUM")]
