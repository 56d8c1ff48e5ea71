"""What a `torch.utils.data.DataLoader(...)` call asks for: workers, pinned memory, persistent workers.

Values are read from literals only. A setting passed as a variable, or any `*args`/`**kwargs`
in the call, makes the call unreadable (None) and VP103 stays silent about it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from verifier.static.names import ImportTable, has_star_args, is_false, is_true, keyword_arg, positional_arg

# torchdata's `StatefulDataLoader` is a drop-in subclass: the same arguments, positions and defaults.
DATALOADERS = frozenset({
    "torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader",
    "torchdata.stateful_dataloader.StatefulDataLoader",
    "torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader",
})
# Positions in DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
# collate_fn, pin_memory, ...); persistent_workers is keyword-only.
_NUM_WORKERS_AT = 5
_PIN_MEMORY_AT = 7


@dataclass(frozen=True)
class LoaderSettings:
    """Literal settings, defaults where absent; None where the call passes a non-literal."""

    num_workers: int | None
    pin_memory: bool | None
    persistent_workers: bool | None


def loader_settings(call: cst.Call, imports: ImportTable) -> LoaderSettings | None:
    """The settings of a DataLoader construction, or None when `call` is not one we can read."""
    if imports.call_name(call) not in DATALOADERS or has_star_args(call):
        return None
    return LoaderSettings(
        num_workers=_integer(_argument(call, "num_workers", _NUM_WORKERS_AT), default=0),
        pin_memory=_flag(_argument(call, "pin_memory", _PIN_MEMORY_AT)),
        persistent_workers=_flag(_argument(call, "persistent_workers", None)),
    )


def _argument(call: cst.Call, keyword: str, position: int | None) -> cst.BaseExpression | None:
    arg = keyword_arg(call, keyword) or (positional_arg(call, position) if position is not None else None)
    return arg.value if arg is not None else None


def _integer(node: cst.BaseExpression | None, default: int) -> int | None:
    if node is None:
        return default
    return int(node.evaluated_value) if type(node) is cst.Integer else None


def _flag(node: cst.BaseExpression | None) -> bool | None:
    if node is None or is_false(node):
        return False
    return True if is_true(node) else None
