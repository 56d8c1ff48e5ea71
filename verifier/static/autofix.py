"""The fix a rule offers with a finding: a libcst node and the node to put in its place.

A rule builds the replacement from the nodes it matched (`node.with_changes(...)`), so the code
inside them (arguments, comments, line breaks) is kept as written. Once positions are known the
engine turns it into an `Autofix` of plain data (`verifier.findings`): where the node is, the
code it holds, the code that replaces it. `verifier.fixes` applies it later, to the file as it is
then, and only if that node still holds the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from verifier.findings import Autofix, Edit


@dataclass(frozen=True, eq=False)
class Fix:
    """Replace `node` (an expression the rule matched) with `replacement`. `title` says what the
    change does in the imperative (`Use torch.autocast("cuda", ...)`); `safe` whether it keeps
    the code's behaviour."""

    node: cst.BaseExpression
    replacement: cst.BaseExpression
    title: str
    safe: bool


def as_autofix(fix: Fix, module: cst.Module, positions: Mapping[cst.CSTNode, object]) -> Autofix | None:
    """The fix as data, or None when its node has no position (it is not part of `module`)."""
    if fix.node not in positions:
        return None
    span = positions[fix.node]
    edit = Edit(
        kind=type(fix.node).__name__,
        line=span.start.line,
        column=span.start.column + 1,
        end_line=span.end.line,
        end_column=span.end.column + 1,
        original=module.code_for_node(fix.node),
        replacement=module.code_for_node(fix.replacement),
    )
    return Autofix(fix.title, fix.safe, (edit,))
