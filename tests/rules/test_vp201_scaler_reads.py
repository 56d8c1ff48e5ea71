"""VP201: a GradScaler keeps its scale on the device; `get_scale()` reads it with `.item()` and
`state_dict()` reads it and the growth tracker (the docs warn of the sync). Read every step to
log the scale, it waits for the device every step; the premise that the scale is on the device is
assumed (a scaler may be built for the CPU), so MEDIUM at most."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.findings import Premise, Status
from verifier.static.runner import analyze_paths

CODE = """\
import torch


class ScalerWithNorm:
    def __init__(self):
        self._scaler = torch.amp.GradScaler("cuda")

    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()

    def state_dict(self):
        return self._scaler.state_dict()


def train(model, optimizer, loader, preprocess):
    scaler = torch.amp.GradScaler("cuda")
    wrapped = ScalerWithNorm()
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scale = scaler.get_scale()
        wrapped(loss, optimizer)
        logged = wrapped.state_dict()["scale"]
        normalizer = preprocess.get_scale()
    torch.save({"scaler": scaler.state_dict()}, "last.pt")
"""


def test_reading_the_scale_every_step_waits_for_the_device(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent(CODE))
    found = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    # The wrapper's `state_dict()` is hot through the loop's call; the checkpoint after the loop
    # and a `get_scale()` of something that is not a GradScaler are not reads of a scale.
    assert [(f.line, f.code, f.severity.name) for f in found] == [(14, "VP201", "MEDIUM"), (26, "VP201", "MEDIUM")]
    value = next(e for e in found[1].evidence if e.premise is Premise.VALUE)
    assert value.status is Status.ASSUMED
    assert value.text.startswith("`scaler` is a GradScaler: it keeps its scale on the device it scales for")
