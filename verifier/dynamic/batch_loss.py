"""How the components form turns a batch into a loss when the model computes its own.

Models in the wild take their targets and return their loss: nanoGPT's `model(idx, targets)`
returns `(logits, loss)`, a Hugging Face model called with `labels=` returns an output whose
`.loss` is set. The entry names a `forward` callable `(model, batch) -> output` (or leaves it
out: the batch is then spread into the call, `model(*batch)` or `model(**batch)`), and
`loss_from` finds the loss in what came back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn


class LossNotFound(ValueError):
    """The model's output holds no loss the harness can train on; the message says what it held."""


def call_model(model: nn.Module, batch: Any) -> Any:
    """The model called with the batch spread into its arguments: a mapping as keywords
    (`input_ids=..., labels=...`), a tuple or list as positional arguments, anything else as one."""
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, (tuple, list)):
        return model(*batch)
    return model(batch)


def loss_from(output: Any) -> torch.Tensor:
    """The scalar loss in a model's output: the output itself, its `loss` key or attribute, or the
    one scalar floating tensor in a tuple or list (`(logits, loss)` and `(loss, logits)` alike)."""
    if isinstance(output, torch.Tensor):
        return _scalar(output, "the model's output")
    if isinstance(output, Mapping) and "loss" in output:
        return _scalar(output["loss"], "its 'loss'")
    if not isinstance(output, (tuple, list)) and getattr(output, "loss", None) is not None:
        return _scalar(output.loss, "its .loss")
    if isinstance(output, (tuple, list)):
        scalars = [item for item in output if _is_scalar_loss(item)]
        if len(scalars) == 1:
            return scalars[0]
        raise LossNotFound(
            f"the model returned a {type(output).__name__} of {len(output)} with {len(scalars)} scalar floating "
            "tensors: expected exactly one loss (as in (logits, loss)); name a forward that returns it"
        )
    held = "its loss is None (were labels or targets passed?)" if hasattr(output, "loss") else f"a {type(output).__name__}"
    raise LossNotFound(f"the model's output holds no loss: {held}; name a forward that returns it, or a loss_fn")


def _is_scalar_loss(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point()


def _scalar(value: Any, what: str) -> torch.Tensor:
    if _is_scalar_loss(value):
        return value
    shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
    raise LossNotFound(f"{what} is not a scalar floating loss tensor ({shape}); name a forward that returns the loss")
