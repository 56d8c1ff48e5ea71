"""Named lambdas are functions: `log = lambda t: t.item()` runs where `log(...)` is called.

The engine walks such a lambda as a function of that name (`HeatModel.name_lambda`); a rule or
tracker that keeps state per function mixes this in, so the lambda's body is a scope of its own
as a `def` body is, and not part of the branch, loop or scope that defines it.
"""

from __future__ import annotations

import libcst as cst


class LambdaScopes:
    """Opens the walker's function scope (`visit_FunctionDef` / `leave_FunctionDef`, which must
    read only what a lambda has too: its `params`) for each named lambda."""

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self.context.heat.lambda_name(node) is not None:
            self.visit_FunctionDef(node)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        if self.context.heat.lambda_name(node) is not None:
            self.leave_FunctionDef(node)
