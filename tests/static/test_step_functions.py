"""A training step runs once per step, whoever calls it: a step function handed to a framework
(`Engine(train_step)`) is step code although no analysed loop calls it, and a loop that calls
the step through a parameter (`step_fn=self.train_step`) is the step loop, in the file's own
re-analysis too, across modules, and behind `**kwargs`."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

SELECT = ("VP201", "VP203")


def findings(root, files: dict[str, str]) -> list[tuple[str, str, int, str]]:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    result = analyze_paths([str(root)], Settings(select=SELECT))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings]


HANDED_TO_A_FRAMEWORK = """\
import torch
from ignite.engine import Engine


def run(model, optimizer, loader, device):
    def train_step(engine, batch):
        x = batch.to(device)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        return float(loss)

    Engine(train_step).run(loader)
"""


def test_a_step_function_no_analysed_code_calls_runs_every_step(tmp_path):
    assert findings(tmp_path, {"train.py": HANDED_TO_A_FRAMEWORK}) == [
        ("train.py", "VP203", 11, "LOW"),  # right before the read, which waits anyway
        ("train.py", "VP201", 12, "MEDIUM"),
    ]
    result = analyze_paths([str(tmp_path)], Settings(select=SELECT))
    trace = [(step.line, step.what) for step in result.findings[1].heat_trace]
    assert trace == [(
        6,
        "step function: train_step() does a backward pass and then the optimizer step, and no code analysed"
        " here calls it",
    )]
    # Inferred, not shown by a caller: the frequency premise is assumed, so nothing blocks on it.
    frequency = [e for e in result.findings[1].evidence if e.premise.value == "frequency"]
    assert [(e.status.value, e.line) for e in frequency] == [("assumed", 6)]


def test_a_step_function_that_accumulates_micro_batches_is_still_one_step(tmp_path):
    code = """\
    import torch

    def train_step(model, optimizer, chunks):
        for chunk in chunks:
            model(chunk.cuda()).sum().backward()
        optimizer.step()
        torch.cuda.synchronize()
    """
    # HIGH at step heat, capped at MEDIUM: that it runs every step is inferred, not shown.
    assert findings(tmp_path, {"train.py": code}) == [("train.py", "VP203", 7, "MEDIUM")]


def test_a_training_loop_function_nobody_calls_is_not_one_step(tmp_path):
    # The update is inside its own loop: that loop is the step loop, the line after it runs once.
    code = """\
    import torch

    def fit(model, optimizer, loader):
        for batch in loader:
            model(batch.cuda()).sum().backward()
            optimizer.step()
        torch.cuda.synchronize()
    """
    assert findings(tmp_path, {"train.py": code}) == []


def test_a_step_function_a_visible_caller_runs_once_per_epoch_keeps_the_callers_heat(tmp_path):
    # Full-batch training: the caller shows how often it runs (an epoch loop that also evaluates).
    code = """\
    import torch

    def train(model, optimizer, features, labels):
        loss = torch.nn.functional.cross_entropy(model(features.cuda()), labels.cuda())
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()

    def test(model, features):
        model.eval()
        return model(features.cuda())

    def main(model, optimizer, features, labels, epochs):
        for epoch in range(epochs):
            train(model, optimizer, features, labels)
            test(model, features)
    """
    assert findings(tmp_path, {"train.py": code}) == [("train.py", "VP203", 7, "MEDIUM")]


def test_a_function_that_only_steps_without_a_backward_is_not_floored(tmp_path):
    code = """\
    import torch

    def apply_update(optimizer):
        optimizer.step()
        torch.cuda.synchronize()
    """
    assert findings(tmp_path, {"train.py": code}) == []


SKORCH_LIKE = """\
import torch


class Net:
    def train_step(self, batch):
        loss = self.module(batch.cuda()).sum()
        loss.backward()
        self.optimizer.step()
        return loss

    def run_single_epoch(self, iterator, step_fn, **fit_params):
        for batch in iterator:
            step_fn(batch, **fit_params)
            torch.cuda.synchronize()

    def fit(self, iterator, epochs, **fit_params):
        for epoch in range(epochs):
            self.run_single_epoch(iterator, step_fn=self.train_step, **fit_params)
"""


def test_a_bound_method_passed_by_keyword_behind_kwargs_makes_the_loop_a_step_loop(tmp_path):
    assert findings(tmp_path, {"net.py": SKORCH_LIKE}) == [("net.py", "VP203", 14, "HIGH")]


def test_the_step_a_parameter_runs_is_followed_in_another_module(tmp_path):
    files = {
        "steps.py": """\
            def train_step(model, optimizer, batch):
                loss = model(batch.cuda()).sum()
                loss.backward()
                optimizer.step()
                return loss
            """,
        "loop.py": """\
            import torch

            from steps import train_step

            def run_epoch(loader, step_fn, model, optimizer):
                for batch in loader:
                    step_fn(model, optimizer, batch)
                    torch.cuda.synchronize()

            def main(loader, model, optimizer, epochs):
                for epoch in range(epochs):
                    run_epoch(loader, train_step, model, optimizer)
            """,
    }
    assert findings(tmp_path, files) == [("loop.py", "VP203", 8, "HIGH")]


def test_a_positional_argument_behind_star_args_stays_unknown(tmp_path):
    # `*args` may fill any position: the parameter is not bound, the loop is not shown to step.
    code = SKORCH_LIKE.replace(
        "self.run_single_epoch(iterator, step_fn=self.train_step, **fit_params)",
        "self.run_single_epoch(*fit_params, self.train_step)",
    )
    assert ("net.py", "VP203", 14, "HIGH") not in findings(tmp_path, {"net.py": code})


def test_a_step_whose_backward_and_update_are_in_functions_it_calls_is_one_step(tmp_path):
    # Ignite's segmentation reference: the process function calls the forward and a backward
    # pass chosen by configuration, which scales, steps and updates.
    code = """\
    import torch
    from ignite.engine import Engine

    def run(model, optimizer, scaler, criterion, horovod):
        def forward_pass(batch):
            x, y = batch[0].cuda(), batch[1].cuda()
            return criterion(model(x), y)

        def backward_pass(engine, loss):
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

        def synchronised_backward_pass(engine, loss):
            scaler.scale(loss).backward()
            optimizer.synchronize()
            scaler.step(optimizer)
            scaler.update()

        backward = synchronised_backward_pass if horovod else backward_pass

        def training_step(engine, batch):
            loss = forward_pass(batch)
            output = {"batch loss": loss.item()}
            backward(engine, loss)
            return output

        return Engine(training_step)
    """
    assert findings(tmp_path, {"train.py": code}) == [("train.py", "VP201", 24, "MEDIUM")]


def test_what_a_step_handed_in_returns_is_known_where_it_is_called(tmp_path):
    code = """\
    def train_step(model, optimizer, batch):
        loss = model(batch.cuda()).sum()
        loss.backward()
        optimizer.step()
        return loss

    def run_epoch(loader, step_fn, model, optimizer):
        for batch in loader:
            loss = step_fn(model, optimizer, batch)
            print(loss.item())

    def fit(loader, model, optimizer, epochs):
        for epoch in range(epochs):
            run_epoch(loader, train_step, model, optimizer)
    """
    # LOW with the value unknown before: the call through the parameter returned nothing known.
    assert findings(tmp_path, {"train.py": code}) == [("train.py", "VP201", 10, "MEDIUM")]


def test_a_loop_over_the_optimizers_by_name_is_no_step_loop(tmp_path):
    # skorch: each optimizer is looked up by name in the loop's body; zeroing or stepping each of
    # them is one update, and the loop over batches that calls the step is the step loop.
    code = """\
    import torch

    class Net:
        def _zero_grad_optimizer(self):
            for name in self._optimizers:
                optimizer = getattr(self, name + "_")
                optimizer.zero_grad()

        def _step_optimizer(self, step_fn):
            for name in self._optimizers:
                optimizer = getattr(self, name + "_")
                optimizer.step(step_fn)

        def train_step(self, batch):
            def step_fn():
                self._zero_grad_optimizer()
                loss = self.module_(batch.cuda()).sum()
                loss.backward()
                return loss
            self._step_optimizer(step_fn)

        def validation_step(self, batch):
            with torch.no_grad():
                return self.module_(batch.cuda()).sum()

        def run_single_epoch(self, iterator, step_fn):
            for batch in iterator:
                step_fn(batch)
                torch.cuda.synchronize()

        def fit_loop(self, train, valid, epochs):
            for epoch in range(epochs):
                self.run_single_epoch(train, step_fn=self.train_step)
                self.run_single_epoch(valid, step_fn=self.validation_step)
    """
    assert findings(tmp_path, {"net.py": code}) == [("net.py", "VP203", 29, "HIGH")]


def test_a_parameter_named_like_a_function_calls_what_the_caller_passes(tmp_path):
    # `step_fn` is also a module-level function that trains; the parameter of that name hides it:
    # the loop runs `log_batch` on every batch (no update: not a step loop, so not HIGH).
    code = """\
    import torch

    def step_fn(model, optimizer, batch):
        model(batch.cuda()).sum().backward()
        optimizer.step()

    def log_batch(model, optimizer, batch):
        torch.cuda.synchronize()

    def run(loader, step_fn, model, optimizer):
        for batch in loader:
            step_fn(model, optimizer, batch)

    def main(loader, model, optimizer):
        run(loader, log_batch, model, optimizer)
    """
    assert findings(tmp_path, {"train.py": code}) == [("train.py", "VP203", 8, "LOW")]


def test_a_test_that_takes_one_training_step_lends_no_step_heat(tmp_path):
    # pytest runs each test once: the model set-up it calls (a barrier) is not per-step code.
    files = {
        "wrapped.py": """\
            import torch.distributed as dist

            def load_model(path):
                dist.barrier()
                return path
            """,
        "tests/test_training.py": """\
            from wrapped import load_model

            def test_one_step(optimizer):
                model = load_model("ckpt")
                model(1).sum().backward()
                optimizer.step()
            """,
    }
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP603",)))
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line) for f in result.findings] == []
