"""Walk-order state that several rules read (grad mode, rate-limit guards, host data).

A tracker has `visit_<Node>` / `leave_<Node>` methods like a rule. A rule asks for one with
`context.tracker(Kind)`; the first ask creates it, every later ask gets the same instance, and
the engine feeds each tracker once per node, before any rule sees that node (on the way in and
on the way out). Three rules reading grad mode cost one grad-mode tracker, not three.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verifier.static.context import ModuleContext


class Tracker:
    def __init__(self, context: ModuleContext) -> None:
        self.context = context
