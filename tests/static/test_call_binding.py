"""Call binding: facts of call-site arguments reach the callee's parameters across files.

Each test is a small project in the shape real training code takes: a trainer class that keeps
its collaborators in `self`, a criterion built by a factory, a logging helper that every training
engine calls with a Python number. A fact crosses a call only when every visible call site agrees.
"""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths


def write(root, files: dict[str, str]) -> None:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))


def findings(root, select: tuple[str, ...]) -> list[tuple[str, str, int, str, str]]:
    result = analyze_paths([str(root)], Settings(select=select))
    return [
        (f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name, f.heat.label)
        for f in result.findings
    ]


# --- A: `self.<attr>` typed from `__init__`, methods inherited from a base class ---

SAMPLERS = """
    import numpy as np
    import torch


    class TimestepSampler:
        def probabilities(self):
            raise NotImplementedError

        def draw(self, count, device):
            probs = self.probabilities()
            picked = np.random.choice(len(probs), size=(count,), p=probs)
            timesteps = torch.from_numpy(picked).long().to(device)
            return timesteps


    class FlatSampler(TimestepSampler):
        def __init__(self, steps):
            self.probs = np.ones(steps) / steps

        def probabilities(self):
            return self.probs
"""

DIFFUSION_TRAINER = """
    import torch

    from samplers import FlatSampler


    class DiffusionTrainer:
        def __init__(self, model, optimizer, steps, sampler=None):
            self.model = model
            self.optimizer = optimizer
            self.sampler = sampler or FlatSampler(steps)

        def fit(self, loader, device):
            for images in loader:
                images = images.to(device, non_blocking=True)
                for part in images.split(8):
                    timesteps = self.sampler.draw(part.shape[0], device)
                    self.model(part, timesteps).mean().backward()
                self.optimizer.step()
"""


def test_a_method_inherited_by_the_instance_init_stores_runs_every_step(tmp_path):
    write(tmp_path, {"samplers.py": SAMPLERS, "trainer.py": DIFFUSION_TRAINER})
    assert findings(tmp_path, ("VP104",)) == [("samplers.py", "VP104", 13, "MEDIUM", "step")]


def test_an_override_in_the_subclass_is_what_runs(tmp_path):
    overriding = SAMPLERS + """

    class FixedSampler(TimestepSampler):
        def draw(self, count, device):
            return torch.zeros(count, dtype=torch.long, device=device)
    """
    trainer = DIFFUSION_TRAINER.replace("FlatSampler", "FixedSampler")
    write(tmp_path, {"samplers.py": overriding, "trainer.py": trainer})
    assert findings(tmp_path, ("VP104",)) == []


# --- B: an attribute from a constructor argument, a generator over a DataLoader ---

LOADING = """
    from torch.utils.data import DataLoader


    def endless_batches(dataset, batch_size):
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=2, shuffle=True)
        while True:
            yield from loader
"""

LOOP = """
    import torch


    class Loop:
        def __init__(self, *, model, optimizer, data, micro):
            self.model = model
            self.optimizer = optimizer
            self.data = data
            self.micro = micro

        def run(self):
            while True:
                images, labels = next(self.data)
                self.step(images, labels)

        def step(self, images, labels):
            self.optimizer.zero_grad()
            for start in range(0, images.shape[0], self.micro):
                chunk = images[start : start + self.micro].to("cuda")
                self.model(chunk).mean().backward()
            self.optimizer.step()
"""

SCRIPT = """
    import torch

    from loading import endless_batches
    from loop import Loop

    model = torch.nn.Linear(8, 8).cuda()
    Loop(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
         data=endless_batches(dataset, 64), micro=16).run()
"""


def test_a_micro_batch_of_a_generator_over_a_loader_is_host_data(tmp_path):
    write(tmp_path, {"loading.py": LOADING, "loop.py": LOOP, "train.py": SCRIPT})
    assert findings(tmp_path, ("VP102",)) == [("loop.py", "VP102", 20, "LOW", "step")]


def test_a_second_caller_passing_unknown_data_leaves_the_batch_unknown(tmp_path):
    other = SCRIPT.replace("endless_batches(dataset, 64)", "stream_from_queue()")
    write(tmp_path, {"loading.py": LOADING, "loop.py": LOOP, "train.py": SCRIPT, "train_stream.py": other})
    assert findings(tmp_path, ("VP102",)) == []


# --- C: a parameter bound to an instance of a project class (through a returned tuple) ---

CRITERION = """
    import torch
    from torch import nn


    class MatchingLoss(nn.Module):
        def forward(self, outputs, targets):
            count = sum(len(t["labels"]) for t in targets)
            count = torch.as_tensor([count], dtype=torch.float, device=outputs["logits"].device)
            count = torch.clamp(count, min=1).item()
            return {"loss": outputs["logits"].sum() / count}


    def build(args):
        model = Detector(args)
        criterion = MatchingLoss()
        return model, criterion
"""

ENGINE = """
    def train_one_epoch(model, criterion, loader, optimizer, device):
        for images, targets in loader:
            outputs = model(images.to(device, non_blocking=True))
            losses = criterion(outputs, targets)
            optimizer.zero_grad()
            losses["loss"].backward()
            optimizer.step()
"""

MAIN = """
    import torch

    from engine import train_one_epoch
    from models import build_model

    model, criterion = build_model(args)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in range(args.epochs):
        train_one_epoch(model, criterion, loader, optimizer, torch.device("cuda"))
"""


def test_a_criterion_passed_by_the_caller_runs_its_forward_every_step(tmp_path):
    write(tmp_path, {
        "models/__init__.py": "from .matching import build\n\n\ndef build_model(args):\n    return build(args)\n",
        "models/matching.py": CRITERION,
        "engine.py": ENGINE,
        "main.py": MAIN,
    })
    assert findings(tmp_path, ("VP201",)) == [("matching.py", "VP201", 10, "MEDIUM", "step")]


def test_callers_passing_different_classes_bind_nothing(tmp_path):
    other = MAIN.replace("model, criterion = build_model(args)", "model, criterion = Detector(args), PlainLoss()")
    write(tmp_path, {
        "models/__init__.py": "from .matching import build\n\n\ndef build_model(args):\n    return build(args)\n",
        "models/matching.py": CRITERION,
        "engine.py": ENGINE,
        "main.py": MAIN,
        "main_plain.py": other,
    })
    assert findings(tmp_path, ("VP201",)) == []


# --- D: a Python number every caller passes ---

DISTRIBUTED = """
    import torch
    import torch.distributed as dist


    def mean_over_ranks(value):
        if dist.get_world_size() > 1:
            reduced = torch.tensor(value).cuda()
            dist.all_reduce(reduced)
            return reduced.item() / dist.get_world_size()
        return value
"""

PRETRAIN = """
    import distributed


    def pretrain_epoch(model, loader, optimizer, device):
        for images in loader:
            loss = model(images.to(device, non_blocking=True))
            loss.backward()
            optimizer.step()
            loss_value = loss.item()
            logged = distributed.mean_over_ranks(loss_value)
"""


def test_a_number_from_every_caller_makes_the_tensor_a_host_factory(tmp_path):
    finetune = PRETRAIN.replace("pretrain_epoch", "finetune_epoch").replace("loss.item()", "float(loss)")
    write(tmp_path, {"distributed.py": DISTRIBUTED, "pretrain.py": PRETRAIN, "finetune.py": finetune})
    assert findings(tmp_path, ("VP104",)) == [("distributed.py", "VP104", 8, "MEDIUM", "step")]


def test_one_caller_passing_a_tensor_leaves_the_value_unknown(tmp_path):
    finetune = PRETRAIN.replace("pretrain_epoch", "finetune_epoch").replace("loss.item()", "loss.detach()")
    write(tmp_path, {"distributed.py": DISTRIBUTED, "pretrain.py": PRETRAIN, "finetune.py": finetune})
    assert findings(tmp_path, ("VP104",)) == []


def test_a_caller_unpacking_its_arguments_leaves_the_value_unknown(tmp_path):
    finetune = PRETRAIN.replace("pretrain_epoch", "finetune_epoch").replace(
        "distributed.mean_over_ranks(loss_value)", "distributed.mean_over_ranks(*[loss_value])"
    )
    write(tmp_path, {"distributed.py": DISTRIBUTED, "pretrain.py": PRETRAIN, "finetune.py": finetune})
    assert findings(tmp_path, ("VP104",)) == []


# --- what binding must not change ---


def test_a_benchmark_sweep_over_configurations_is_not_an_evaluation_loop(tmp_path):
    # The engine's generate() runs the model (known once `engine` is bound to the project's
    # class), yet a loop over batch sizes calling the timed routine runs one measurement each.
    write(tmp_path, {
        "engine.py": """
            class Engine:
                def __init__(self, model):
                    self.model = model

                def generate(self, tokens, steps):
                    for _ in range(steps):
                        tokens = self.model(tokens).argmax(-1)
                        yield tokens
        """,
        "infer_bench.py": """
            import time
            import torch

            from engine import Engine


            def bench_generate(engine, tokens, steps):
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in engine.generate(tokens, steps):
                    pass
                torch.cuda.synchronize()
                return time.perf_counter() - start


            engine = Engine(model)
            for batch_size in (1, 8, 64):
                bench_generate(engine, prompt.repeat(batch_size, 1), 128)
        """,
    })
    assert findings(tmp_path, ("VP203",)) == []


def test_relative_imports_in_a_package_init_name_the_package(tmp_path):
    write(tmp_path, {
        "nets/__init__.py": "import torch\n\nfrom .heads import read_score\n\n\ndef score(logits):\n    return read_score(torch.softmax(logits, -1))\n",
        "nets/heads.py": "def read_score(logits):\n    return logits.max().item()\n",
        "train.py": """
            from nets import score

            for x in loader:
                logits = model(x.cuda(non_blocking=True))
                logits.sum().backward()
                optimizer.step()
                score(logits)
        """,
    })
    # `torch.softmax(logits, -1)` of the model's device output is on the device: shown, so MEDIUM.
    assert findings(tmp_path, ("VP201",)) == [("heads.py", "VP201", 2, "MEDIUM", "step")]


def test_a_static_method_called_through_an_instance_binds_from_its_first_parameter(tmp_path):
    write(tmp_path, {
        "helpers.py": """
            import torch


            class Reducer:
                @staticmethod
                def scaled(count, value):
                    return torch.tensor(value).cuda() / count
        """,
        "train.py": """
            from helpers import Reducer


            def train(reducer, loader):
                for x in loader:
                    loss = model(x.cuda(non_blocking=True))
                    loss.backward()
                    optimizer.step()
                    reducer.scaled(4, loss.detach())


            train(Reducer(), loader)
        """,
    })
    # `count` gets the number, `value` a tensor (unknown to binding): nothing to report.
    assert findings(tmp_path, ("VP104",)) == []


def test_the_trace_names_the_called_instance_as_the_caller_calls_it(tmp_path):
    write(tmp_path, {
        "models/__init__.py": "from .matching import build\n\n\ndef build_model(args):\n    return build(args)\n",
        "models/matching.py": CRITERION,
        "engine.py": ENGINE,
        "main.py": MAIN,
    })
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201",)))
    assert [(s.path.rsplit("/", 1)[-1], s.line, s.what) for f in result.findings for s in f.heat_trace] == [
        ("engine.py", 5, "calls criterion()"),
        ("engine.py", 3, "step loop: iterates loader, calls optimizer.step()"),
    ]


# --- Deep chains: the project pass follows them without running out of stack ---


def forwarding_chain(helpers: int) -> str:
    """`forward_0(value)` ... each passing its argument on to the next, the last one building a
    tensor from it; defined far end first, so binding the last parameter starts the whole chain."""
    last = f"def forward_{helpers}(value):\n    return torch.tensor(value).cuda()\n"
    links = "".join(f"\n\ndef forward_{n}(value):\n    return forward_{n + 1}(value)\n" for n in reversed(range(helpers)))
    loop = (
        "\n\ndef train(model, loader, optimizer):\n    for images in loader:\n        loss = model(images)\n"
        "        loss.backward()\n        optimizer.step()\n        forward_0(loss.item())\n"
    )
    return "import torch\n\n\n" + last + links + loop


def test_a_number_forwarded_through_400_helpers_still_reaches_the_last_one(tmp_path):
    (tmp_path / "chain.py").write_text(forwarding_chain(400))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP104",)))
    assert result.internal_errors == []
    assert [(f.code, f.line, f.heat.label) for f in result.findings] == [("VP104", 5, "step")]


DEEP_SUBSCRIPT = "import torch\n\n\ndef pick(batch):\n    return batch\n\n\ndef first(x):\n    return pick(x" + "[0]" * 500 + ")\n"
NESTED_BY_STATEMENTS = (
    "import torch\n\n\ndef unpack(loader):\n    x0 = loader\n"
    + "".join(f"    x{n + 1} = (next(x{n}), 1)\n" for n in range(600))
    + "    return consume(x600)\n\n\ndef consume(value):\n    return value\n"
)


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_deep_chains_anywhere_in_the_project_leave_every_files_findings(tmp_path, monkeypatch, capsys, cached):
    """A 500-level subscript chain, 400 forwarding helpers or 600 statements nesting a value used
    to end the whole run in a RecursionError (exit 2, no findings)."""
    from verifier.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    write(tmp_path, {"distributed.py": DISTRIBUTED, "pretrain.py": PRETRAIN})
    (tmp_path / "deep.py").write_text(DEEP_SUBSCRIPT)
    (tmp_path / "nested.py").write_text(NESTED_BY_STATEMENTS)
    (tmp_path / "chain.py").write_text(forwarding_chain(400))
    cache = ["--cache-dir", str(tmp_path / "cache")] if cached else ["--no-cache"]
    for _ in range(1 + cached):  # with the cache, once to fill it and once to read it
        assert main([".", "--select", "VP104", "--no-report", "-q", *cache]) == 0
        message = ("VP104 [MEDIUM] `torch.tensor(value)` is created on the host and copied to the device here: "
                   "create it with `device=` (or once, outside the loop)")
        assert capsys.readouterr().out.splitlines() == [f"chain.py:5:12: {message}", f"distributed.py:8:19: {message}"]


def test_a_step_function_chosen_by_a_conditional_expression_runs_every_step(tmp_path):
    write(tmp_path, {"train.py": """\
        import torch


        def train_step(model, optimizer, batch):
            loss = model(batch.to("cuda")).mean()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize()


        compiled_step = None


        def train(model, optimizer, loader):
            step = compiled_step if compiled_step is not None else train_step
            for batch in loader:
                step(model, optimizer, batch)
        """})
    assert findings(tmp_path, ("VP203",)) == [("train.py", "VP203", 8, "HIGH", "step")]


SHADOWED_INSTANCE = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(Net().cuda())


class Probe(torch.nn.Module):
    def read(self, value):
        float(value)


def run_probe(model, value):
    model.read(value)


probe = Probe()
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
    run_probe(probe, loss)
"""


def test_a_parameter_named_like_a_global_instance_is_the_value_passed(analyse):
    # `model` in `run_probe` is the Probe passed in, not the module-level DDP model: the call
    # binds to Probe.read with the loss, a device tensor.
    assert analyse(SHADOWED_INSTANCE, select=("VP201",)) == [("VP201", 9, "MEDIUM")]


# --- A batch of a loader `accelerator.prepare` placed, handed to another function ---

PREPARED = """
    import torch
    from accelerate import Accelerator


    class Trainer:
        def process_batch(self, batch, model, accelerator):
            latents = batch["latents"].to(accelerator.device)
            return model(latents).mean()

        def train(self, model, optimizer, dataset):
            accelerator = Accelerator()
            loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2, pin_memory=True, persistent_workers=True)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for step, batch in enumerate(loader):
                loss = self.process_batch(batch, model, accelerator)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
"""


def test_a_batch_of_a_prepared_loader_is_on_the_device_in_the_method_it_is_handed_to(tmp_path):
    # Accelerate moves each batch of a prepared loader to the device: `.to(accelerator.device)`
    # in the method that receives it copies nothing from the host (sd-scripts' `process_batch`).
    write(tmp_path, {"trainer.py": PREPARED})
    assert findings(tmp_path, ("VP102",)) == []


def test_a_batch_of_a_loader_nobody_prepared_is_still_copied_from_the_host(tmp_path):
    unprepared = PREPARED.replace("model, optimizer, loader = accelerator.prepare(model, optimizer, loader)", "model, optimizer = accelerator.prepare(model, optimizer)")
    write(tmp_path, {"trainer.py": unprepared})
    assert findings(tmp_path, ("VP102",)) == [("trainer.py", "VP102", 8, "LOW", "step")]


def test_the_counter_of_an_enumerated_prepared_loader_is_no_device_tensor(tmp_path):
    # `for step, batch in enumerate(loader)`: only `batch` arrives on the device; `step` handed to
    # the step function is a Python int, and `if step % accum == 0:` reads nothing from the device.
    write(tmp_path, {"train.py": """
        import torch
        from accelerate import Accelerator


        def train_step(batch, step, model, optimizer, accelerator, accum):
            loss = model(batch).mean()
            accelerator.backward(loss)
            if step % accum == 0:
                optimizer.step()
                optimizer.zero_grad()


        def main(model, optimizer, dataset, accum):
            accelerator = Accelerator()
            loader = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2, pin_memory=True, persistent_workers=True)
            model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
            for step, batch in enumerate(loader):
                train_step(batch, step, model, optimizer, accelerator, accum)
    """})
    # Every rule joins the walk: the host-data model some of them need once took the counter for
    # a batch, and the binding made it a device tensor.
    assert [f for f in findings(tmp_path, ("VP",)) if f[1] == "VP201"] == []
