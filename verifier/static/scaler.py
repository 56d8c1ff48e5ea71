"""GradScaler facts shared by the AMP rules (VP301-VP305) and the sync rule (VP201)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from verifier.static.names import method_name, receiver
from verifier.static.walk import iter_descendants

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext
    from verifier.static.facts import NameFacts
    from verifier.static.names import ImportTable

SCALER_METHODS = frozenset({"scale", "step", "update", "unscale_"})
_FINITENESS_FUNCTIONS = frozenset(
    {"torch.isfinite", "torch.isnan", "torch.isinf", "math.isfinite", "math.isnan", "math.isinf"}
)
_FINITENESS_METHODS = frozenset({"isfinite", "isnan", "isinf"})
_EXITS = (cst.Continue, cst.Return, cst.Break, cst.Raise)


def scaler_method(call: cst.Call, facts: NameFacts) -> str | None:
    """`step` for `scaler.step(opt)` when the receiver is a GradScaler, else None."""
    method = method_name(call)
    if method in SCALER_METHODS and facts.is_scaler(receiver(call)):
        return method
    return None


def has_finiteness_check(node: cst.CSTNode, imports: ImportTable) -> bool:
    """True when `node` calls torch/math isfinite/isnan/isinf (as a function or a method)."""
    candidates = [node, *iter_descendants(node)]
    for child in candidates:
        if isinstance(child, cst.Call):
            if imports.call_name(child) in _FINITENESS_FUNCTIONS or method_name(child) in _FINITENESS_METHODS:
                return True
    return False


def calls_scaler_step(node: cst.CSTNode, facts: NameFacts) -> bool:
    return any(
        isinstance(child, cst.Call) and scaler_method(child, facts) == "step"
        for child in iter_descendants(node)
    )


def is_finite_guard(node: cst.If, context: ModuleContext) -> bool:
    """An `if` that tests finiteness and so decides whether `scaler.step` runs.

    Either the step is inside the guarded branch, or the branch leaves the step early
    (`continue`/`return`) in a function that calls `scaler.step`.
    """
    if not has_finiteness_check(node.test, context.imports):
        return False
    if calls_scaler_step(node, context.facts):
        return True
    leaves_early = any(isinstance(child, _EXITS) for child in iter_descendants(node.body))
    function = context.heat.where().function
    scope = function.node if function is not None else context.module
    return leaves_early and calls_scaler_step(scope, context.facts)
