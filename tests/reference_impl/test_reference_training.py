"""The reference step follows the recommended AMP order, never syncs, and learns the task."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from verifier.reference_impl import train as train_module
from verifier.reference_impl.__main__ import main
from verifier.reference_impl.presets import get_preset
from verifier.reference_impl.session import build_session
from verifier.reference_impl.train import Precision, make_optimizer, train, train_step


@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_tiny_preset_learns_on_cpu(mode, one_thread):
    session = build_session(get_preset("tiny"), mode, torch.device("cpu"), seed=0)
    try:
        interval_losses = train(session.step, steps=80, log_interval=20, device=torch.device("cpu"))
        evaluation = session.evaluate()
    finally:
        session.close()

    assert len(interval_losses) == 4
    assert interval_losses[0] > 3.0  # starts near ln(32) = 3.47
    assert interval_losses[-1] < 0.5 * interval_losses[0]
    assert evaluation.tokens == 4 * 32 * (32 - 3)  # period 4: the first 3 targets are unpredictable
    assert evaluation.accuracy > 0.5


def test_interval_means_cover_a_short_last_interval():
    losses = iter([1.0, 2.0, 3.0, 4.0, 5.0])
    means = train(lambda: torch.tensor(next(losses)), steps=5, log_interval=2, device=torch.device("cpu"))
    assert means == [1.5, 3.5, 5.0]


class RecordingScaler(torch.amp.GradScaler):
    def __init__(self, calls: list[str]) -> None:
        super().__init__("cpu", enabled=True)
        self.calls = calls

    def scale(self, outputs):
        self.calls.append("scale")
        return super().scale(outputs)

    def unscale_(self, optimizer):
        self.calls.append("unscale_")
        return super().unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.calls.append("step")
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None):
        self.calls.append("update")
        return super().update(new_scale)


def test_fp16_step_runs_scale_backward_unscale_clip_step_update(monkeypatch):
    calls: list[str] = []
    model = nn.Linear(4, 2)
    model.weight.register_hook(lambda grad: calls.append("backward"))
    clip = nn.utils.clip_grad_norm_
    monkeypatch.setattr(train_module.nn.utils, "clip_grad_norm_", lambda *a, **k: (calls.append("clip"), clip(*a, **k))[1])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    loss = train_step(
        model,
        optimizer,
        RecordingScaler(calls),
        Precision("fp32", "cpu"),
        torch.randn(3, 4),
        torch.tensor([0, 1, 0]),
        max_grad_norm=1.0,
        loss_fn=nn.functional.cross_entropy,
    )

    assert calls == ["scale", "backward", "unscale_", "clip", "step", "update"]
    assert not loss.requires_grad
    assert model.weight.grad is None  # zero_grad(set_to_none=True)


def test_only_fp16_enables_the_grad_scaler():
    assert Precision("fp16", "cpu").grad_scaler().is_enabled()
    assert not Precision("bf16", "cpu").grad_scaler().is_enabled()
    assert not Precision("fp32", "cpu").grad_scaler().is_enabled()
    assert Precision("bf16", "cpu").dtype is torch.bfloat16


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown mode 'fp8'"):
        Precision("fp8", "cpu")


def test_optimizer_is_fused_adamw_where_supported():
    optimizer = make_optimizer(nn.Linear(4, 4), learning_rate=1e-3, weight_decay=0.0)
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.defaults["fused"] is True


def test_command_line_trains_and_reports(capsys, one_thread):
    assert main(["--preset", "tiny", "--mode", "bf16", "--device", "cpu", "--steps", "10", "--log-interval", "5"]) == 0
    output = capsys.readouterr().out
    assert "mode bf16; device cpu; 26,944 parameters; world size 1" in output
    assert "step      5  train loss" in output
    assert "step     10  train loss" in output
    eval_line = next(line for line in output.splitlines() if line.startswith("eval loss"))
    assert math.isfinite(float(eval_line.split()[2]))


def test_command_line_rejects_cuda_without_a_device(capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit) as exit_info:
        main(["--device", "cuda"])
    assert exit_info.value.code == 2
    assert "no CUDA device is available" in capsys.readouterr().err
