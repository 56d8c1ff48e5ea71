"""How often frameworks call the methods users override: Lightning's `training_step` runs every
step although no loop in the user's code calls it; `validation_step` every evaluation batch; a
Hugging Face `TrainerCallback.on_step_end` every step, `on_log` every logging interval.

The heat model gives a hook this heat before any call site is seen; call sites can only raise it.
A class counts as a framework class by its base's name (`pl.LightningModule`, `TrainerCallback`)
and, for names other frameworks share (`Callback`, `Trainer`), by the module it was imported from.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Heat
from verifier.static.names import ImportTable, dotted_name

_STEP, _EVAL, _EPOCH = Heat.STEP, Heat.EVAL, Heat.EPOCH

# Hooks a Lightning module and a Lightning callback share.
_LIGHTNING_HOOKS = {
    "on_train_batch_start": _STEP, "on_train_batch_end": _STEP, "on_before_backward": _STEP,
    "on_after_backward": _STEP, "on_before_optimizer_step": _STEP, "on_before_zero_grad": _STEP,
    "on_validation_batch_start": _EVAL, "on_validation_batch_end": _EVAL,
    "on_test_batch_start": _EVAL, "on_test_batch_end": _EVAL, "on_predict_batch_end": _EVAL,
    "on_train_epoch_start": _EPOCH, "on_train_epoch_end": _EPOCH,
    "on_validation_epoch_start": _EPOCH, "on_validation_epoch_end": _EPOCH,
}
_LIGHTNING_MODULE = {
    **_LIGHTNING_HOOKS,
    "training_step": _STEP, "optimizer_step": _STEP, "optimizer_zero_grad": _STEP, "backward": _STEP,
    "validation_step": _EVAL, "test_step": _EVAL, "predict_step": _EVAL,
}
_HF_CALLBACK = {
    "on_step_begin": _STEP, "on_step_end": _STEP, "on_substep_end": _STEP,
    "on_pre_optimizer_step": _STEP, "on_optimizer_step": _STEP, "on_prediction_step": _EVAL,
    # Every `logging_steps` / `eval_steps` / epoch: periodic, not per step.
    "on_log": _EPOCH, "on_evaluate": _EPOCH, "on_save": _EPOCH, "on_epoch_begin": _EPOCH, "on_epoch_end": _EPOCH,
}
_HF_TRAINER = {"training_step": _STEP, "compute_loss": _STEP, "prediction_step": _EVAL}
_HF_TRAINERS = frozenset({"Trainer", "Seq2SeqTrainer", "SFTTrainer", "RewardTrainer", "GRPOTrainer"})
# trl's preference trainers: `compute_loss` asks `get_batch_loss_metrics` for the loss and its
# metrics on every micro-batch (and `prediction_step` on every evaluation batch), which runs
# `concatenated_forward`: an override of either runs every step.
_TRL_PREFERENCE = {**_HF_TRAINER, "get_batch_loss_metrics": _STEP, "concatenated_forward": _STEP}
_TRL_PREFERENCE_TRAINERS = frozenset({"DPOTrainer", "KTOTrainer", "ORPOTrainer", "CPOTrainer", "BCOTrainer"})
_LIGHTNING_PACKAGES = ("pytorch_lightning", "lightning")
_HF_PACKAGES = ("transformers", "trl")


def hooks_of_class(node: cst.ClassDef, imports: ImportTable) -> dict[str, Heat]:
    """The hook table of a class that subclasses a framework base, else empty."""
    for base in node.bases:
        written = dotted_name(base.value)
        if written is None:
            continue
        last = written.rsplit(".", 1)[-1]
        origin = imports.qualify(written) or ""
        if last == "LightningModule":
            return _LIGHTNING_MODULE
        if last == "TrainerCallback":
            return _HF_CALLBACK
        if last == "Callback" and origin.startswith(_LIGHTNING_PACKAGES):
            return _LIGHTNING_HOOKS
        if last in _HF_TRAINERS and origin.startswith((*_HF_PACKAGES, ".")):
            # A relative import of `SFTTrainer` is the package's own trainer (inside `trl`).
            return _HF_TRAINER
        if last in _TRL_PREFERENCE_TRAINERS and origin.startswith((*_HF_PACKAGES, ".")):
            return _TRL_PREFERENCE
    return {}


def ignite_handler_heat(node: cst.FunctionDef) -> Heat | None:
    """`@trainer.on(Events.ITERATION_COMPLETED)`: every step; with `(every=N)` or at epoch events,
    periodic."""
    heats = []
    for decorator in node.decorators:
        call = decorator.decorator
        if type(call) is not cst.Call or type(call.func) is not cst.Attribute or call.func.attr.value != "on":
            continue
        if not call.args:
            continue
        event = call.args[0].value
        filtered = type(event) is cst.Call and bool(event.args)
        name = dotted_name(event.func if type(event) is cst.Call else event) or ""
        if name.endswith(("ITERATION_COMPLETED", "ITERATION_STARTED")):
            heats.append(_EPOCH if filtered else _STEP)
        elif name.endswith(("EPOCH_COMPLETED", "EPOCH_STARTED")):
            heats.append(_EPOCH)
    return max(heats) if heats else None


_CALLER = {
    id(_LIGHTNING_HOOKS): "Lightning", id(_LIGHTNING_MODULE): "Lightning",
    id(_HF_CALLBACK): "the Hugging Face Trainer", id(_HF_TRAINER): "the Hugging Face Trainer",
    id(_TRL_PREFERENCE): "trl's trainer",
}


def hook_reason(table: dict[str, Heat], node: cst.FunctionDef, heat: Heat) -> str:
    """The heat-trace step of a hook: `Lightning calls training_step() every step`. `table` is
    its class's hook table (empty outside a framework class: then an Ignite handler)."""
    name = node.name.value
    caller = _CALLER.get(id(table), "Ignite") if table.get(name) == heat else "Ignite"
    often = "every epoch or interval" if heat is _EPOCH else heat.often
    return f"{caller} calls {name}() {often}"
