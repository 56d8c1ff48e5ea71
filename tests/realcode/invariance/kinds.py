"""Every rewrite kind, in report order, and whether it must keep the findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.realcode.invariance import (
    behaviour,
    extract,
    factory,
    loss_shapes,
    main_guard,
    renames,
    timer,
)
from tests.realcode.invariance.probed import Pair, Probed


@dataclass(frozen=True)
class Kind:
    name: str
    preserving: bool
    make: Callable[[Probed], Pair]


KINDS: tuple[Kind, ...] = (
    Kind("rename_loss", True, renames.rename_loss),
    Kind("rename_model", True, renames.rename_model),
    Kind("rename_loop_variable", True, renames.rename_loop_variable),
    Kind("loss_named_output", True, loss_shapes.named_output),
    Kind("loss_indexed_output", True, loss_shapes.indexed_output),
    Kind("loss_keyed_output", True, loss_shapes.keyed_output),
    Kind("loss_dict_packed", True, loss_shapes.dict_packed),
    Kind("extract_function", True, extract.extract_function),
    Kind("extract_module", True, extract.extract_module),
    Kind("extract_method", True, extract.extract_method),
    Kind("wrap_main", True, main_guard.wrap_main),
    Kind("step_timer", True, timer.step_timer),
    Kind("inline_helper", True, extract.inline_helper),
    Kind("model_factory", True, factory.model_factory),
    Kind("guard_probe", False, behaviour.guard_probe),
    Kind("move_after_loop", False, behaviour.move_after_loop),
)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}
