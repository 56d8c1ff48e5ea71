"""The hot-path model on its own: which loops are step/epoch, and heat through calls."""

from __future__ import annotations

import textwrap

import libcst as cst

from verifier.findings import Heat
from verifier.static.heat import HeatModel, heat_of
from verifier.static.names import ImportTable
from verifier.static.walk import walk


def heat_of_marked_lines(code: str) -> dict[str, Heat]:
    """Heat of every `mark("label")` call in the snippet, keyed by label."""
    module = cst.parse_module(textwrap.dedent(code))
    imports = ImportTable()
    heat = HeatModel(imports)
    marks: list[tuple[str, object]] = []

    def on_call(node):
        heat.on_call(node)
        if isinstance(node.func, cst.Name) and node.func.value == "mark":
            marks.append((node.args[0].value.evaluated_value, heat.where()))

    visitors = {
        cst.Call: [on_call],
        cst.FunctionDef: [heat.enter_function],
        cst.For: [heat.enter_loop],
        cst.While: [heat.enter_loop],
        # A `for` loop opens with its body: its header's iterable runs once, before the loop.
        cst.IndentedBlock: [heat.enter_block],
        cst.SimpleStatementSuite: [heat.enter_block],
        cst.ClassDef: [heat.enter_class],
        cst.Import: [imports.add],
        cst.ImportFrom: [imports.add],
    }
    leavers = {
        cst.FunctionDef: [lambda node: heat.leave_function()],
        cst.For: [lambda node: heat.leave_loop()],
        cst.While: [lambda node: heat.leave_loop()],
        cst.ClassDef: [lambda node: heat.leave_class()],
        cst.Assign: [lambda node: heat.on_assign([t.target for t in node.targets], node.value)],
    }
    walk(module, visitors, leavers)
    heat.resolve()
    return {label: heat_of(where) for label, where in marks}


def test_epoch_and_step_loops_from_training_signals():
    heats = heat_of_marked_lines(
        """
        mark("before")
        for epoch in range(10):
            mark("epoch")
            for x, y in train_loader:
                loss = model(x)
                loss.backward()
                mark("step")
            mark("end of epoch")
        mark("after")
        """
    )
    assert heats == {
        "before": Heat.ONCE, "epoch": Heat.EPOCH, "step": Heat.STEP,
        "end of epoch": Heat.EPOCH, "after": Heat.ONCE,
    }


def test_function_called_from_a_step_loop_is_step_code():
    heats = heat_of_marked_lines(
        """
        def read(loss):
            mark("helper")
            return loss

        def log_epoch():
            mark("epoch helper")

        for epoch in range(3):
            for batch in batches:
                optimizer.zero_grad()
                read(model(batch))
            log_epoch()
        """
    )
    assert heats == {"helper": Heat.STEP, "epoch helper": Heat.EPOCH}


def test_self_method_called_per_batch_is_step_code():
    heats = heat_of_marked_lines(
        """
        class Trainer:
            def fit(self):
                for epoch in range(self.epochs):
                    self.train_epoch()

            def train_epoch(self):
                for batch in self.loader:
                    self.training_step(batch)
                mark("per epoch")

            def training_step(self, batch):
                mark("per step")
                self.model(batch).mean().backward()
        """
    )
    assert heats == {"per epoch": Heat.EPOCH, "per step": Heat.STEP}


def test_range_of_steps_and_while_loops_with_backward_are_step_loops():
    heats = heat_of_marked_lines(
        """
        for it in range(max_iters):
            loss = model(batch)
            loss.backward()
            optimizer.step()
            mark("range of steps")
        step = 0
        while step < total:
            model(batch).sum().backward()
            mark("while trains")
            step += 1
        for name in names:
            mark("plain loop")
        """
    )
    assert heats == {"range of steps": Heat.STEP, "while trains": Heat.STEP, "plain loop": Heat.ONCE}


def test_a_step_count_or_data_source_name_alone_does_not_make_a_step_loop():
    heats = heat_of_marked_lines(
        """
        for it in range(max_iters):
            mark("range of steps without training")
        for batch in train_loader:
            mark("loader without training")
        step = 0
        while step < total_steps:
            mark("while without training")
            step += 1
        """
    )
    assert heats == {
        "range of steps without training": Heat.ONCE,
        "loader without training": Heat.ONCE,
        "while without training": Heat.ONCE,
    }


def test_data_source_loop_that_runs_the_model_without_training_is_an_eval_loop():
    heats = heat_of_marked_lines(
        """
        for epoch in range(10):
            for x, y in train_loader:
                loss = model(x)
                loss.backward()
                optimizer.step()
                mark("step")
            for x, y in val_loader:
                out = model(x)
                mark("eval batch")
            mark("end of epoch")
        for x in test_loader:
            mark("test batch")
            model(x)
        """
    )
    assert heats == {
        "step": Heat.STEP, "eval batch": Heat.EVAL, "end of epoch": Heat.EPOCH, "test batch": Heat.EVAL,
    }


def test_a_loop_over_evaluations_reads_their_results_once_per_evaluation():
    # Each validation set is one evaluation (its own loop over batches); what the loop around
    # the calls reads comes once per evaluation, not once per batch.
    heats = heat_of_marked_lines(
        """
        import torch

        def evaluate(model, iterator):
            model.eval()
            totals = {}
            for batch in iterator:
                totals["loss"] = model(batch).mean()
                mark("eval batch")
            return totals

        def evaluate_all(model, data_iterators):
            for iterator in data_iterators:
                totals = evaluate(model, iterator)
                value = torch.exp(totals["loss"])
                mark("per evaluation")
        """
    )
    assert heats == {"eval batch": Heat.EVAL, "per evaluation": Heat.ONCE}


def test_the_loop_that_steps_the_optimizer_is_a_step_loop_under_gradient_accumulation():
    heats = heat_of_marked_lines(
        """
        for epoch in range(epochs):
            mark("epoch")
            for step in range(steps_per_epoch):
                for micro in range(accumulation):
                    loss = model(next(data_iter))
                    loss.backward()
                    mark("micro batch")
                optimizer.step()
                optimizer.zero_grad()
                mark("update")
        """
    )
    assert heats == {"epoch": Heat.EPOCH, "micro batch": Heat.STEP, "update": Heat.STEP}


def test_a_loop_over_the_optimizers_is_part_of_one_update_not_a_step_loop():
    heats = heat_of_marked_lines(
        """
        for epoch in range(epochs):
            mark("epoch")
            for it in range(100):
                for micro in range(accumulation):
                    loss = model(next(data_iter))
                    loss.backward()
                for opt, sched in zip(optimizers, schedulers):
                    opt.step()
                    sched.step()
                    mark("each optimizer")
                for i in range(len(optimizers)):
                    scaler.step(optimizers[i])
                mark("after the update")
        """
    )
    assert heats == {"epoch": Heat.EPOCH, "each optimizer": Heat.STEP, "after the update": Heat.STEP}


def test_an_indexed_optimizer_steps_the_loop_it_is_in():
    heats = heat_of_marked_lines(
        """
        for epoch in range(epochs):
            mark("epoch")
            for it in range(100):
                for micro in range(accumulation):
                    model(next(data_iter)).backward()
                optimizers[0].step()
                mark("update")
        """
    )
    assert heats == {"epoch": Heat.EPOCH, "update": Heat.STEP}


def test_a_for_header_runs_once_before_its_loop():
    heats = heat_of_marked_lines(
        """
        for epoch in range(3):
            for batch in mark("header"):
                model(batch).sum().backward()
                optimizer.step()
                mark("body")
        """
    )
    assert heats == {"header": Heat.EPOCH, "body": Heat.STEP}


def test_a_function_that_puts_the_model_in_eval_mode_without_training_is_capped_at_eval_heat():
    heats = heat_of_marked_lines(
        """
        def evaluate(model, batch):
            model.eval()
            mark("evaluate")
            return model(batch)

        def train_step(model, batch):
            model.train()
            model(batch).sum().backward()
            mark("train step")

        for batch in loader:
            train_step(model, batch)
            optimizer.step()
            evaluate(model, batch)
        """
    )
    assert heats == {"evaluate": Heat.EVAL, "train step": Heat.STEP}


def test_innermost_tensor_loop_of_a_benchmark_function_is_step_code():
    heats = heat_of_marked_lines(
        """
        import time
        import torch

        def measure(fn, x, repeats, iters):
            for r in range(repeats):
                mark("outer")
                for _ in range(iters):
                    fn(x)
                    mark("inner")

        def report(rows):
            for row in rows:
                torch.tensor(row)
                mark("not a benchmark")
        """
    )
    assert heats == {"outer": Heat.EPOCH, "inner": Heat.STEP, "not a benchmark": Heat.ONCE}


def test_heat_propagates_through_recursion_without_looping_forever():
    heats = heat_of_marked_lines(
        """
        def a(n):
            mark("a")
            return b(n - 1)

        def b(n):
            return a(n) if n else 0

        for batch in loader:
            model(batch).sum().backward()
            a(3)
        """
    )
    assert heats == {"a": Heat.STEP}


def test_methods_of_instances_of_classes_in_the_module_carry_heat():
    heats = heat_of_marked_lines(
        """
        class Meter:
            def update(self, value):
                mark("meter")

        class Trainer:
            def __init__(self):
                self.meter = Meter()

            def fit(self):
                for batch in self.loader:
                    self.model(batch).sum().backward()
                    self.meter.update(batch)

        trainer = Trainer()
        trainer.fit()
        """
    )
    assert heats == {"meter": Heat.STEP}


def test_memoised_functions_run_once_whatever_calls_them():
    heats = heat_of_marked_lines(
        """
        import functools

        @functools.lru_cache
        def has_nvlink():
            mark("cached")

        for batch in loader:
            model(batch).sum().backward()
            has_nvlink()
        """
    )
    assert heats == {"cached": Heat.ONCE}


def test_framework_hooks_run_as_often_as_the_framework_calls_them():
    heats = heat_of_marked_lines(
        """
        import lightning as L
        from lightning.pytorch.callbacks import Callback
        from transformers import Trainer, TrainerCallback
        from ignite.engine import Events

        class Classifier(L.LightningModule):
            def training_step(self, batch, batch_idx):
                mark("training_step")
                self.helper()

            def helper(self):
                mark("called from training_step")

            def validation_step(self, batch, batch_idx):
                mark("validation_step")

            def configure_optimizers(self):
                mark("configure_optimizers")

        class GradNorms(Callback):
            def on_after_backward(self, trainer, module):
                mark("lightning callback")

        class Timing(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                mark("on_step_end")

            def on_log(self, args, state, control, logs=None, **kwargs):
                mark("on_log")

        class WeightedTrainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                mark("compute_loss")

        class Trainer2:  # not a framework class: its methods are not hooks
            def training_step(self):
                mark("own class")

        def attach(trainer):
            @trainer.on(Events.ITERATION_COMPLETED)
            def every_iteration(engine):
                mark("ignite iteration")

            @trainer.on(Events.ITERATION_COMPLETED(every=50))
            def every_fifty(engine):
                mark("ignite every 50")
        """
    )
    assert heats == {
        "training_step": Heat.STEP, "called from training_step": Heat.STEP,
        "validation_step": Heat.EVAL, "configure_optimizers": Heat.ONCE,
        "lightning callback": Heat.STEP, "on_step_end": Heat.STEP, "on_log": Heat.EPOCH,
        "compute_loss": Heat.STEP, "own class": Heat.ONCE,
        "ignite iteration": Heat.STEP, "ignite every 50": Heat.EPOCH,
    }


def test_trls_preference_trainers_run_the_batch_metrics_and_forward_hooks_every_step():
    heats = heat_of_marked_lines(
        """
        from trl import DPOTrainer, KTOTrainer

        class PairTrainer(DPOTrainer):
            def get_batch_loss_metrics(self, model, batch, train_eval="train"):
                mark("dpo metrics")

            def concatenated_forward(self, model, batch):
                mark("dpo forward")

            def save_model(self, output_dir=None):
                mark("not a hook")

        class SingleTrainer(KTOTrainer):
            def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                mark("kto loss")
        """
    )
    assert heats == {
        "dpo metrics": Heat.STEP, "dpo forward": Heat.STEP, "not a hook": Heat.ONCE, "kto loss": Heat.STEP,
    }


def test_a_call_to_a_function_of_the_same_module_is_not_foreign():
    """`foreign` decides whether a call lends its caller's accelerator across modules; keys carry
    the import root, so the same-module test must compare rooted keys."""
    module = cst.parse_module("from helpers import norm\n\ndef inner(x):\n    return x\n\ndef outer(x):\n    inner(x)\n    norm(x)\n")
    imports = ImportTable()
    heat = HeatModel(imports, module_name="train", import_root="/project", path="/project/train.py")
    walk(
        module,
        {cst.FunctionDef: [heat.enter_function], cst.Call: [heat.on_call], cst.ImportFrom: [imports.add]},
        {cst.FunctionDef: [lambda node: heat.leave_function()]},
    )
    outer = next(fn for fn in heat.functions if fn.key.endswith("train.outer"))
    assert [(site.callee.rpartition(":")[2], site.foreign) for site in outer.calls] == [
        ("train.inner", False),
        ("helpers.norm", True),
    ]


def test_a_step_loop_found_late_down_a_call_chain_still_makes_the_outer_loop_an_epoch_loop():
    # Defined outermost first: each sweep finds one more caller that has a step loop below it,
    # and the loop in `run_all` is classified again once `run_epoch` has turned out to hold one.
    heats = heat_of_marked_lines(
        """
        def run_all():
            for epoch in range(3):
                mark("epoch body")
                run_epoch()

        def run_epoch():
            train_one_pass()

        def train_one_pass():
            for batch in loader:
                loss = model(batch)
                loss.backward()
                optimizer.step()
                mark("step")

        run_all()
        """
    )
    assert heats == {"epoch body": Heat.EPOCH, "step": Heat.STEP}


def test_heat_reaches_the_bottom_of_a_call_chain_defined_innermost_first():
    heats = heat_of_marked_lines(
        """
        def innermost():
            mark("innermost")

        def middle():
            innermost()

        def outer():
            middle()

        for batch in loader:
            model(batch).backward()
            optimizer.step()
            outer()
        """
    )
    assert heats == {"innermost": Heat.STEP}


def test_a_loop_over_files_that_calls_an_evaluation_is_a_sweep_not_an_eval_loop(analyse):
    code = """\
    import subprocess
    import torch

    def export(weights):
        model = torch.load(weights).cuda()
        model(torch.zeros(1, 3, 64, 64, device="cuda"))
        subprocess.run(["convert", weights])

    def evaluate(model, batch):
        return model(batch.cuda()).mean().item()

    def main(opt, model, val_loader):
        for weights in opt.weights:
            export(weights)
        for batch in val_loader:
            evaluate(model, batch)
    """
    # One export per weight file runs once per file, not per batch: no subprocess finding. The
    # loop over a data source that calls an evaluation is an eval loop: its read is reported.
    assert analyse(code, select=("VP201", "VP204")) == [("VP201", 10, "LOW")]


def test_full_batch_training_that_evaluates_every_iteration_takes_one_step_per_epoch():
    heats = heat_of_marked_lines(
        """
        def train():
            model.train()
            optimizer.zero_grad()
            loss = criterion(model(data.x, data.edge_index), data.y)
            loss.backward()
            optimizer.step()
            mark("update")

        def test():
            model.eval()
            mark("evaluation")

        for epoch in range(200):
            train()
            test()
            mark("iteration")
        """
    )
    assert heats == {"update": Heat.EPOCH, "evaluation": Heat.EPOCH, "iteration": Heat.EPOCH}


def test_an_evaluation_under_an_interval_leaves_the_loop_a_step_loop():
    heats = heat_of_marked_lines(
        """
        def train_step():
            loss = model(*get_batch()).mean()
            loss.backward()
            optimizer.step()
            mark("update")

        def evaluate():
            model.eval()

        for it in range(max_iters):
            train_step()
            if it % eval_interval == 0:
                evaluate()
            mark("iteration")
        """
    )
    assert heats == {"update": Heat.STEP, "iteration": Heat.STEP}


def test_a_rollout_inside_the_loop_that_trains_runs_every_step():
    heats = heat_of_marked_lines(
        """
        for iteration in range(iterations):
            for step in range(num_steps):
                with torch.no_grad():
                    action = policy(obs)
                obs, reward, done, info = envs.step(action)
                mark("rollout")
            for minibatch in range(minibatches):
                loss = policy(obs).sum()
                loss.backward()
                optimizer.step()
        while episodes < evaluation_episodes:
            action = policy(obs)
            obs, reward, done, info = env.step(action)
            mark("evaluation")
        """
    )
    # The evaluation after training steps an environment too, but nothing around it trains.
    assert heats == {"rollout": Heat.STEP, "evaluation": Heat.EVAL}


def test_a_loop_over_the_parts_of_one_batch_is_part_of_the_step():
    heats = heat_of_marked_lines(
        """
        for images in train_loader:
            outputs = []
            for crop in images:
                outputs.append(model(crop))
                mark("crop")
            loss = criterion(outputs)
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                for x in val_loader:
                    model(x)
                    mark("validation")
        """
    )
    # A loop over a data source in the step loop's body stays an evaluation (here a throttled one).
    assert heats == {"crop": Heat.STEP, "validation": Heat.EVAL}
