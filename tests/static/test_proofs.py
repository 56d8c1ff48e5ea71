"""Findings carry their premises: the frequency premise read off branches and traces, the cap
the weakest premise puts on the severity, and what each status means for blocking."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.findings import Premise, Severity, Status
from verifier.static.runner import analyze_paths


def evidence(tmp_path, code: str, select: str = "VP203", preview: bool = False):
    """[(line, severity, {premise: (status, text)})] for the selected rule's findings."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    result = analyze_paths([str(path)], Settings(select=(select,), cache_dir=None, preview=preview))
    return [
        (f.line, f.severity.name, {e.premise: (e.status, e.text) for e in f.evidence}) for f in result.findings
    ]


LOOP = """\
import torch

def train(model, loader, optimizer, args):
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        optimizer.step()
{body}
"""


def _loop(body: str) -> str:
    return LOOP.format(body=textwrap.indent(textwrap.dedent(body), " " * 8))


def test_an_unconditional_per_step_sync_has_every_premise_proven(tmp_path):
    [(line, severity, premises)] = evidence(tmp_path, _loop("torch.cuda.synchronize()"))
    assert (line, severity) == (8, "HIGH")
    assert premises[Premise.COST][0] is Status.PROVEN
    status, text = premises[Premise.FREQUENCY]
    assert status is Status.PROVEN
    assert text == "runs every step: the step loop (iterates loader, calls optimizer.step())"


def test_a_run_constant_setting_keeps_the_heat_and_is_named(tmp_path):
    code = _loop("if strict and scaler is not None:\n    torch.cuda.synchronize()").replace(
        "    for step", "    strict = args.strict\n    scaler = make_scaler(args)\n    for step"
    )
    [(_, severity, premises)] = evidence(tmp_path, code)
    # Bound before the loop and never in it: the line runs every step of the runs that set it.
    status, text = premises[Premise.FREQUENCY]
    assert status is Status.PROVEN and severity == "HIGH"
    assert text.endswith("when `strict and scaler is not None` holds (run-constant)")


@pytest.mark.parametrize(
    "body",
    [
        "if loss > 10:\n    torch.cuda.synchronize()",
        "if step > warmup:\n    torch.cuda.synchronize()",
        "try:\n    pass\nexcept RuntimeError:\n    torch.cuda.synchronize()",
    ],
    ids=["tensor-test", "step-counter", "except-handler"],
)
def test_a_branch_that_depends_on_the_data_makes_the_frequency_unknown(tmp_path, body):
    [(_, severity, premises)] = evidence(tmp_path, _loop(body))
    status, text = premises[Premise.FREQUENCY]
    assert status is Status.UNKNOWN and "how often is not known" in text
    assert severity == "LOW"  # unknown caps at LOW


@pytest.mark.parametrize(
    "test",
    ["self.use_fp16", "p.grad is not None", "isinstance(p, torch.nn.Linear)", "rank == 0 and not args.dry_run"],
)
def test_presence_type_and_setting_checks_are_run_constant(tmp_path, test):
    body = f"for p in model.parameters():\n    if {test}:\n        torch.cuda.synchronize()"
    code = _loop(body).replace("def train(model, loader, optimizer, args):", "def train(self, model, loader, optimizer, args, rank):")
    [(_, _, premises)] = evidence(tmp_path, code)
    assert premises[Premise.FREQUENCY][0] is Status.PROVEN


def test_the_rest_of_a_step_after_a_data_dependent_exit_is_assumed_to_run(tmp_path):
    body = "if found_nan(loss):\n    continue\ntorch.cuda.synchronize()"
    [(_, severity, premises)] = evidence(tmp_path, _loop(body))
    status, text = premises[Premise.FREQUENCY]
    assert (status, severity) == (Status.ASSUMED, "MEDIUM")
    assert text == "runs every step unless an early exit is taken first (it runs when `not (found_nan(loss))` holds)"


@pytest.mark.parametrize("leave", ["break", "raise RuntimeError('diverged')"])
def test_the_rest_of_a_step_after_the_loop_ends_runs_every_step(tmp_path, leave):
    # `if iter_num >= max_iters: break` ends the loop: every iteration before it runs the rest.
    body = f"if found_nan(loss):\n    {leave}\ntorch.cuda.synchronize()"
    [(_, severity, premises)] = evidence(tmp_path, _loop(body))
    assert (premises[Premise.FREQUENCY][0], severity) == (Status.PROVEN, "HIGH")


def test_a_divisibility_check_on_a_batch_is_no_rate_limit(tmp_path):
    body = "if x.size(0) % world != 0:\n    continue\ntorch.cuda.synchronize()"
    [(_, severity, premises)] = evidence(tmp_path, _loop(body))
    assert (premises[Premise.FREQUENCY][0], severity) == (Status.ASSUMED, "MEDIUM")


def test_the_else_of_a_rate_limit_runs_every_other_step(tmp_path):
    body = "if step % 100 == 0:\n    pass\nelse:\n    torch.cuda.synchronize()"
    [(_, severity, premises)] = evidence(tmp_path, _loop(body))
    assert premises[Premise.FREQUENCY][0] is Status.PROVEN and severity == "HIGH"


def test_a_branch_on_the_call_path_is_part_of_the_frequency(tmp_path):
    code = """\
    import torch

    def wait():
        torch.cuda.synchronize()

    def train(model, loader, optimizer):
        for x, y in loader:
            loss = model(x.cuda(), y.cuda())
            loss.backward()
            optimizer.step()
            if loss.isnan():
                wait()
    """
    [(line, severity, premises)] = evidence(tmp_path, code)
    status, text = premises[Premise.FREQUENCY]
    assert (line, severity, status) == (4, "LOW", Status.UNKNOWN)
    assert text.startswith("runs only when `loss.isnan()` holds at the call")


def test_a_loop_kind_inferred_from_a_benchmark_is_only_assumed(tmp_path):
    code = """\
    import subprocess
    import torch

    def benchmark_forward(model, x, iters=100):
        for _ in range(iters):
            model(x)
            subprocess.run(["nvidia-smi"])
    """
    [(_, severity, premises)] = evidence(tmp_path, code, select="VP204")
    status, text = premises[Premise.FREQUENCY]
    assert status is Status.ASSUMED and text.startswith("runs every step if the step loop is one")
    assert severity == "MEDIUM"


def test_status_caps():
    assert (Status.PROVEN.cap, Status.ASSUMED.cap, Status.UNKNOWN.cap) == (Severity.CRITICAL, Severity.MEDIUM, Severity.LOW)
