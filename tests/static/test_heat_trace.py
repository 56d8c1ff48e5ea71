"""Every finding explains its heat: the call sites from its line up to the loop that makes it hot,
and why that loop is a step, epoch or eval loop."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.findings import TraceStep
from verifier.static.runner import analyze_paths


def write(root, files: dict[str, str]) -> None:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip("\n"))


def traces(root, *, jobs: int = 1, cache_dir: str | None = None) -> list[tuple]:
    """(file, code, line, severity, heat, trace with file names relative to `root`) per finding."""
    result = analyze_paths([str(root)], Settings(select=("VP2",), jobs=jobs, cache_dir=cache_dir))
    prefix = str(root) + "/"
    return [
        (
            f.path.removeprefix(prefix), f.code, f.line, f.severity.name, f.heat.label,
            [(s.path.removeprefix(prefix), s.line, s.what) for s in f.heat_trace],
        )
        for f in result.findings
    ]


TRAIN = """
    import torch

    def log_metrics(loss):
        print(loss.item())

    def train(model, optimizer, train_loader, device):
        for epoch in range(10):
            for x, y in train_loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                optimizer.step()
                print(loss.item())
                log_metrics(loss)
            print(loss.item())
"""


def test_a_finding_in_a_loop_names_that_loop_and_why_and_a_helper_names_its_call_site(tmp_path):
    write(tmp_path, {"train.py": TRAIN})
    step_loop = ("train.py", 8, "step loop: iterates train_loader, calls optimizer.step()")
    # The helper's read is the second of the same value (the loop printed it just before the
    # call): a repeat, with the same trace.
    assert traces(tmp_path) == [
        ("train.py", "VP202", 4, "LOW", "step", [("train.py", 13, "calls log_metrics()"), step_loop]),
        ("train.py", "VP201", 12, "MEDIUM", "step", [step_loop]),
    ]


def test_a_loop_that_only_holds_a_step_loop_is_an_epoch_loop_in_the_trace(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch

            for epoch in range(epochs):
                for x in loader:
                    model(x.cuda()).sum().backward()
                    opt.step()
                torch.cuda.synchronize()
        """,
    })
    assert traces(tmp_path) == [
        ("train.py", "VP203", 7, "MEDIUM", "epoch",
         [("train.py", 3, "epoch loop: contains the step loop at line 4")]),
    ]


def test_gradient_accumulation_inside_while_true(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch

            while True:
                for micro_step in range(gradient_accumulation_steps):
                    loss = model(x.cuda())
                    loss.backward()
                    print(loss.item())
                optimizer.step()
                print(loss.item())
        """,
    })
    assert traces(tmp_path) == [
        ("train.py", "VP201", 7, "MEDIUM", "step",
         [("train.py", 4, "step loop: counts to gradient_accumulation_steps, calls loss.backward()")]),
        ("train.py", "VP201", 9, "MEDIUM", "step",
         [("train.py", 3, "step loop: while True, calls optimizer.step() around the inner step loop at line 4")]),
    ]


def test_a_loop_that_calls_a_training_function_and_a_guarded_call(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch

            def train_step(batch):
                model(batch.cuda()).sum().backward()
                optimizer.step()

            def report(loss):
                torch.cuda.synchronize()

            for step, batch in enumerate(loader):
                train_step(batch)
                torch.cuda.synchronize()
                if step % 100 == 0:
                    report(batch)
        """,
    })
    loop = ("train.py", 10, "step loop: iterates loader, calls train_step(), which steps the optimizer")
    assert traces(tmp_path) == [
        ("train.py", "VP203", 8, "MEDIUM", "epoch", [("train.py", 14, "calls report() under a rate-limit guard"), loop]),
        ("train.py", "VP203", 12, "HIGH", "step", [loop]),
    ]


def test_eval_heat_names_the_eval_loop(tmp_path):
    write(tmp_path, {
        "evaluate.py": """
            import torch

            @torch.no_grad()
            def evaluate(model, val_loader, device):
                for x, y in val_loader:
                    logits = model(x.to(device))
                    print(logits.sum().item())
        """,
    })
    assert traces(tmp_path) == [
        ("evaluate.py", "VP201", 7, "LOW", "eval",
         [("evaluate.py", 5, "eval loop: iterates val_loader, runs model() without training")]),
    ]


def test_across_modules_the_chain_names_the_other_files(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/metrics.py": """
            def read_loss(loss):
                return loss.item()

            def to_device(batch, device):
                return batch.to(device, non_blocking=True)
        """,
        "pkg/steps.py": """
            from .metrics import read_loss

            def train_step(model, batch, optimizer):
                loss = model(batch).mean()
                loss.backward()
                optimizer.step()
                return read_loss(loss)
        """,
        "pkg/train.py": """
            from .steps import train_step

            def fit(model, loader, optimizer):
                for batch in loader:
                    train_step(model, batch, optimizer)
        """,
    })
    expected = [
        ("pkg/metrics.py", "VP201", 2, "LOW", "step", [
            ("pkg/steps.py", 7, "calls read_loss()"),
            ("pkg/train.py", 5, "calls train_step()"),
            ("pkg/train.py", 4, "step loop: iterates loader, calls train_step(), which steps the optimizer"),
        ]),
    ]
    assert traces(tmp_path) == expected
    # The same traces with two processes, and from a cold and a warm cache.
    cache = str(tmp_path / "cache")
    assert traces(tmp_path, jobs=2) == expected
    assert traces(tmp_path, cache_dir=cache) == expected
    assert traces(tmp_path, cache_dir=cache) == expected


def test_findings_at_once_heat_carry_no_trace(tmp_path):
    write(tmp_path, {
        "script.py": """
            import torch

            scaler = torch.cuda.amp.GradScaler()
            for x in loader:
                with torch.cuda.amp.autocast():
                    loss = model(x.cuda())
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
        """,
    })
    result = analyze_paths([str(tmp_path)], Settings(select=("VP308",)))
    assert [(f.line, f.heat.label, f.heat_trace) for f in result.findings] == [
        (3, "once", ()),
        (5, "step", (TraceStep(str(tmp_path / "script.py"), 4, "step loop: iterates loader, calls scaler.step()"),)),
    ]


def test_a_framework_hook_names_the_framework_that_calls_it(tmp_path):
    write(tmp_path, {"model.py": """
        import lightning as L
        import torch
        from transformers import TrainerCallback
        from ignite.engine import Events

        class Classifier(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.net(batch).sum()
                print(loss.item())
                self.report(loss)
                return loss

            def report(self, loss):
                print(loss.item())

            def validation_step(self, batch, batch_idx):
                print(self.net(batch).sum().item())

        class Norms(TrainerCallback):
            def on_step_end(self, args, state, control, model=None, **kwargs):
                print(torch.cuda.max_memory_allocated())
                torch.cuda.synchronize()

        def attach(trainer):
            @trainer.on(Events.ITERATION_COMPLETED)
            def every_iteration(engine):
                torch.cuda.synchronize()
    """})
    lightning = ("model.py", 7, "Lightning calls training_step() every step")
    assert traces(tmp_path) == [
        ("model.py", "VP201", 9, "MEDIUM", "step", [lightning]),
        # `report(loss)` reads again what `training_step` printed just before: a repeat.
        ("model.py", "VP202", 14, "LOW", "step", [("model.py", 10, "calls report()"), lightning]),
        ("model.py", "VP201", 17, "LOW", "eval", [
            ("model.py", 16, "Lightning calls validation_step() every evaluation batch"),
        ]),
        ("model.py", "VP203", 22, "HIGH", "step", [
            ("model.py", 20, "the Hugging Face Trainer calls on_step_end() every step"),
        ]),
        ("model.py", "VP203", 27, "HIGH", "step", [("model.py", 26, "Ignite calls every_iteration() every step")]),
    ]
