"""Opt-in user entry points: `--entry package.module:function` measures the user's own model
or training step the same way as the reference. User code runs only when named here.

The contract. The named function is called once per precision mode, right after
`torch.manual_seed(seed)`, so every mode starts from the same weights. It takes the
`torch.device` to run on (or no argument) and returns a dict, or any object with the
same attributes, in one of two forms:

Components form: the harness writes the step itself, as the reference does (autocast
around forward and loss, GradScaler for fp16, unscale before clipping), with your model,
optimizer and loss:

    model        torch.nn.Module; moved to the device if it is not there already
    optimizer    a torch.optim.Optimizer, or a callable `params -> Optimizer`
    make_batch   callable `step -> batch`     (or: batches, an iterable of batches; it is
                 cycled when exhausted); tensors in the batch are moved to the device
    loss_fn      callable `(model(inputs), targets) -> scalar loss tensor`, for batches
                 `(inputs, targets)`; or, for a model that computes its own loss:
    forward      callable `(model, batch) -> output` (`loss` is another name for it); the
                 loss is the output itself, its `loss` key or attribute (Hugging Face
                 `labels=`), or the one scalar tensor of a tuple (nanoGPT's `(logits, loss)`).
                 Without loss_fn and forward, the batch is spread into the call:
                 `model(*batch)` for a tuple (`model(idx, targets)`), `model(**batch)` for a dict
    optional:    eval_batches (iterable of batches), accuracy_fn (`(outputs, targets) ->
                 fraction correct` with loss_fn; `(output, batch) -> fraction` otherwise),
                 max_grad_norm (None: no clipping), tokens_per_step, flops_per_step,
                 chance_accuracy (accuracy of guessing: an accuracy near it is "not judged"),
                 accuracy_steps (the fixed length of the seeded accuracy runs; default 100,
                 --accuracy-steps overrides it)

The components form is also the one whose accuracy is judged: with `eval_batches` and
`accuracy_fn`, the harness calls the function again after `torch.manual_seed(s)` for each
accuracy seed s (--seed, --seed + 1, ...) and mode, trains that fresh model `accuracy_steps`
steps untimed, and evaluates it; the band over seeds says whether an AMP difference is real.

Step form: the harness times the user's step exactly as written, syncs and all:

    train_step   callable `mode -> loss` doing one whole step in "fp32", "fp16" or "bf16"
                 (the user applies autocast and scaling); the loss may be a tensor, a
                 number or None
    optional:    evaluate (callable `mode -> (loss, accuracy)` or a dict with those keys),
                 tokens_per_step, flops_per_step, chance_accuracy, model and optimizer
                 (named, they give the peak-memory split)

The step form cannot be re-created per seed (its state lives in the user's closure), so its
accuracy is the timed run's own, one run with no band, and its accuracy target is reported
but never judged (a single run cannot tell a difference from run-to-run noise).

Every failure becomes text in the result, never a traceback: loading problems and a
malformed return value are `EntryError`s; an exception from the user's code is described
by `describe_exception` ("ValueError: ... (at train.py:12)").
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from verifier.dynamic.batch_loss import LossNotFound, call_model, loss_from
from verifier.dynamic.memory import estimate_split
from verifier.dynamic.results import MemorySplit, Workload
from verifier.reference_impl.train import Precision, optimisation_step, train_step

_TORCH_DIR = os.path.dirname(torch.__file__)
_VERIFIER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class EntryError(Exception):
    """The entry point could not be loaded or used; the message is report content."""


def load_entry(spec: str) -> Callable[..., Any]:
    """Import `package.module:function` (the current directory is importable, as with `python -m`)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise EntryError(f"entry {spec!r} is not of the form package.module:function")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise EntryError(f"entry not found: cannot import {module_name!r} ({error})") from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - importing user code can raise anything, SystemExit too
        raise EntryError(f"entry module {module_name!r} raised on import: {describe_exception(error)}") from None
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise EntryError(f"entry not found: module {module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        raise EntryError(f"entry {spec!r} is not callable")
    return target


def describe_exception(error: BaseException) -> str:
    """`Type: message (at file:line)`, naming the innermost frame outside torch and verify-perf."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not os.path.abspath(frame.filename).startswith((_TORCH_DIR, _VERIFIER_DIR))
    ]
    if frames:
        text += f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})"
    return text


ENTRY_ACCURACY_STEPS = 100
"""The accuracy runs' length for an entry that names no `accuracy_steps`."""


class EntryWorkload:
    def __init__(self, spec: str, function: Callable[..., Any]) -> None:
        self.spec = spec
        self.function = function
        self.info = Workload(source="entry", name=spec, description=_first_doc_line(function))
        self.form: str | None = None  # "components" or "step", known once opened
        self._accuracy_steps: int | None = None

    @property
    def accuracy_steps(self) -> int:
        return self._accuracy_steps or ENTRY_ACCURACY_STEPS

    def open(self, mode: str, device: torch.device, seed: int) -> ComponentsRun | StepRun:
        torch.manual_seed(seed)
        parts = _call_entry(self.function, device)
        if _part(parts, "train_step") is not None:
            self.form = "step"
            return StepRun(parts, mode)
        self.form = "components"
        steps = _part(parts, "accuracy_steps")
        if steps is not None:
            if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
                raise EntryError(f"entry {self.spec!r}: accuracy_steps must be a positive int, got {steps!r}")
            self._accuracy_steps = steps
        missing = [name for name in ("model", "optimizer") if _part(parts, name) is None]
        if _part(parts, "make_batch") is None and _part(parts, "batches") is None:
            missing.append("make_batch or batches")
        if missing:
            raise EntryError(
                f"entry {self.spec!r} returned {type(parts).__name__} without {', '.join(missing)}: "
                "give either train_step, or model, optimizer, make_batch/batches (and loss_fn or forward)"
            )
        named = [name for name in ("loss_fn", "forward", "loss") if _part(parts, name) is not None]
        if len(named) > 1:
            raise EntryError(f"entry {self.spec!r} names {' and '.join(named)}: give one way to compute the loss")
        return ComponentsRun(parts, mode, device)

    def accuracy_run(self, mode: str, device: torch.device, seed: int) -> ComponentsRun | None:
        """The components form rebuilt from `seed`; None for the step form."""
        if self.form != "components":
            return None
        run = self.open(mode, device, seed)
        if not isinstance(run, ComponentsRun):
            raise EntryError(f"entry {self.spec!r} returned the step form on a later call: the accuracy runs need one form")
        return run

    def estimate_memory(self, mode: str, seed: int = 0) -> MemorySplit | str:
        """The components form's peak split, estimated on fake tensors (CPU runs); the entry is
        called after `torch.manual_seed(seed)`, as for every other run."""
        parts_of_run: dict[str, Any] = {}

        def build() -> tuple[nn.Module, torch.optim.Optimizer]:
            torch.manual_seed(seed)
            parts = _call_entry(self.function, torch.device("cpu"))
            if _part(parts, "train_step") is not None:
                raise EntryError("the step form (train_step) gives no model and optimizer to trace")
            run = ComponentsRun(parts, mode, torch.device("cpu"))
            parts_of_run["run"] = run
            return run.model, run.optimizer

        def step(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
            parts_of_run["run"].step()

        return estimate_split(build, step)


def _call_entry(function: Callable[..., Any], device: torch.device) -> Any:
    try:
        takes_device = bool(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        takes_device = True
    return function(device) if takes_device else function()


def _part(parts: Any, name: str) -> Any:
    if isinstance(parts, dict):
        return parts.get(name)
    return getattr(parts, name, None)


def _first_doc_line(function: Callable[..., Any]) -> str:
    doc = inspect.getdoc(function) or ""
    return doc.splitlines()[0] if doc else ""


def _to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_device(item, device) for item in value)
    if isinstance(value, Mapping):  # a dict, or a dict-like batch (Hugging Face's BatchEncoding)
        return {key: _to_device(item, device) for key, item in value.items()}
    return value


def _pair(batch: Any) -> tuple[Any, Any]:
    """(inputs, targets) of a batch given with loss_fn."""
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    raise EntryError(
        f"with loss_fn a batch must be (inputs, targets), got a {type(batch).__name__}: for a model that takes "
        "its targets (model(x, y), labels=...), leave loss_fn out or name a forward"
    )


def _optional_number(parts: Any, name: str) -> float | None:
    value = _part(parts, name)
    return float(value) if value is not None else None


class ComponentsRun:
    """Steps the user's model with the reference step: same AMP practice as the reference."""

    def __init__(self, parts: Any, mode: str, device: torch.device) -> None:
        self.device = device
        self.model: nn.Module = _on_device(_part(parts, "model"), device)
        optimizer = _part(parts, "optimizer")
        if not isinstance(optimizer, torch.optim.Optimizer):
            optimizer = optimizer(self.model.parameters())
        self.optimizer: torch.optim.Optimizer = optimizer
        self.loss_fn = _part(parts, "loss_fn")
        self.forward: Callable[[nn.Module, Any], Any] = (
            _part(parts, "forward") or _part(parts, "loss") or (lambda model, batch: call_model(model, batch))
        )
        self.precision = Precision(mode, device.type)
        self.scaler = self.precision.grad_scaler()
        self.max_grad_norm = _optional_number(parts, "max_grad_norm")
        self.eval_batches = _part(parts, "eval_batches")
        self.accuracy_fn = _part(parts, "accuracy_fn")
        tokens = _part(parts, "tokens_per_step")
        self.tokens_per_step = int(tokens) if tokens is not None else None
        self.flops_per_step = _optional_number(parts, "flops_per_step")
        self.chance_accuracy = _optional_number(parts, "chance_accuracy")
        self._batches = _batch_source(parts)

    def step(self) -> torch.Tensor:
        batch = _to_device(next(self._batches), self.device)
        if self.loss_fn is not None:
            inputs, targets = _pair(batch)
            return train_step(
                self.model, self.optimizer, self.scaler, self.precision, inputs, targets, self.max_grad_norm, self.loss_fn,
            )
        return optimisation_step(
            self.model, self.optimizer, self.scaler, self.precision, lambda: self._loss(batch)[1], self.max_grad_norm,
        )

    def _loss(self, batch: Any) -> tuple[Any, torch.Tensor]:
        """(what the accuracy reads, the loss) for one batch, under the caller's autocast."""
        if self.loss_fn is not None:
            inputs, targets = _pair(batch)
            outputs = self.model(inputs)
            return outputs, self.loss_fn(outputs, targets)
        output = self.forward(self.model, batch)
        try:
            return output, loss_from(output)
        except LossNotFound as error:
            raise EntryError(str(error)) from None

    def evaluate(self) -> tuple[float | None, float | None]:
        if self.eval_batches is None:
            return None, None
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode():
            losses, accuracies = [], []
            for batch in self.eval_batches:
                batch = _to_device(batch, self.device)
                with self.precision.autocast():
                    outputs, loss = self._loss(batch)
                    losses.append(loss.float())
                if self.accuracy_fn is not None:
                    # With loss_fn: (outputs, targets); with a forward: (output, batch).
                    read = _pair(batch)[1] if self.loss_fn is not None else batch
                    accuracies.append(torch.as_tensor(self.accuracy_fn(outputs, read), dtype=torch.float64))
            loss = torch.stack(losses).mean().item() if losses else None
            accuracy = torch.stack(accuracies).mean().item() if accuracies else None
        self.model.train(was_training)
        return loss, accuracy

    def close(self) -> None:
        self._batches = iter(())

    def memory_parts(self) -> tuple[nn.Module, torch.optim.Optimizer]:
        return self.model, self.optimizer


def _on_device(model: nn.Module, device: torch.device) -> nn.Module:
    """The model moved to `device` only when some parameter or buffer is elsewhere: a module
    already there is left as it is (moving fake tensors fails, and a no-op move is wasted work)."""
    tensors = itertools.chain(model.parameters(), model.buffers())
    if all(tensor.device.type == device.type for tensor in tensors):
        return model
    return model.to(device)


def _batch_source(parts: Any) -> Iterator[Any]:
    make_batch = _part(parts, "make_batch")
    if make_batch is not None:
        return (make_batch(step) for step in itertools.count())
    return itertools.cycle(_part(parts, "batches"))


class StepRun:
    """Calls the user's own `train_step(mode)`: what it does per step is what gets measured."""

    def __init__(self, parts: Any, mode: str) -> None:
        self.mode = mode
        self._parts = parts
        self._train_step = _part(parts, "train_step")
        self._evaluate = _part(parts, "evaluate")
        tokens = _part(parts, "tokens_per_step")
        self.tokens_per_step = int(tokens) if tokens is not None else None
        self.flops_per_step = _optional_number(parts, "flops_per_step")
        self.chance_accuracy = _optional_number(parts, "chance_accuracy")

    def step(self) -> Any:
        return self._train_step(self.mode)

    def evaluate(self) -> tuple[float | None, float | None]:
        if self._evaluate is None:
            return None, None
        outcome = self._evaluate(self.mode)
        if isinstance(outcome, dict):
            outcome = (outcome.get("loss"), outcome.get("accuracy"))
        loss, accuracy = outcome
        return _as_float(loss), _as_float(accuracy)

    def close(self) -> None:
        pass

    def memory_parts(self) -> tuple[nn.Module, torch.optim.Optimizer] | None:
        """The step form may name its `model` and `optimizer` for the memory split."""
        model, optimizer = _part(self._parts, "model"), _part(self._parts, "optimizer")
        if isinstance(model, nn.Module) and isinstance(optimizer, torch.optim.Optimizer):
            return model, optimizer
        return None


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    return value.item() if isinstance(value, torch.Tensor) else float(value)
