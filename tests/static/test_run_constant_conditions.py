"""Branches on where the code runs (`torch.cuda.is_available()`, `x.is_cuda`) are fixed for the
run: the line under them keeps its heat. Probes for other platforms (XPU, MPS) are not the
machine the code is meant for, so their branches stay uncertain."""

from __future__ import annotations

STEP = """\
import torch
from accelerate.utils import is_xpu_available


def train(loader, model, optimizer):
    for x in loader:
        model(x.cuda()).sum().backward()
        optimizer.step()
        if {test}:
            torch.cuda.empty_cache()
"""


def test_a_cuda_availability_probe_keeps_the_step_heat(analyse):
    found = analyse(STEP.format(test="torch.cuda.is_available()"), select=("VP403",))
    assert found == [("VP403", 10, "MEDIUM")]


def test_where_the_batch_lives_is_fixed_for_the_run(analyse):
    found = analyse(STEP.format(test="x.is_cuda"), select=("VP403",))
    assert found == [("VP403", 10, "MEDIUM")]


def test_another_platforms_branch_stays_uncertain(analyse):
    found = analyse(STEP.format(test="is_xpu_available()"), select=("VP403",))
    assert found == [("VP403", 10, "LOW")]


def test_a_trainer_subclassed_inside_its_own_package_has_the_trainers_hooks(tmp_path):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    package = tmp_path / "trl" / "trainer"
    package.mkdir(parents=True)
    (tmp_path / "trl" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "sft_trainer.py").write_text("from transformers import Trainer\n\n\nclass SFTTrainer(Trainer):\n    pass\n")
    (package / "gkd_trainer.py").write_text(
        "import torch\n\nfrom .sft_trainer import SFTTrainer\n\n\n"
        "class GKDTrainer(SFTTrainer):\n"
        "    def compute_loss(self, model, inputs, return_outputs=False):\n"
        "        loss = model(**inputs).loss\n"
        "        torch.cuda.empty_cache()\n"
        "        return loss\n"
    )
    result = analyze_paths([str(tmp_path)], Settings(select=("VP403",)))
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings] == [("gkd_trainer.py", 9, "MEDIUM")]


def test_a_flag_set_in_an_exception_handler_is_no_configuration(analyse):
    # `has_oom = True` only where an out-of-memory error was caught: the recovery branch runs
    # when the step failed, not every step, though the flag is bound to literals only.
    code = """\
    import torch


    def train(model, loader, optimizer):
        for x, y in loader:
            has_oom = False
            try:
                loss = model(x.cuda(), y.cuda())
                loss.backward()
            except torch.cuda.OutOfMemoryError:
                has_oom = True
            if has_oom:
                optimizer.zero_grad()
                torch.cuda.empty_cache()
                continue
            optimizer.step()
            torch.cuda.empty_cache()
    """
    assert analyse(code, select=("VP403",)) == [("VP403", 14, "LOW"), ("VP403", 17, "MEDIUM")]
