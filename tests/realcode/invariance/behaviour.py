"""Rewrites that change how often the probes run, so their findings must change:

- `guard_probe`: the probes under `if <step counter> % 100 == 0:`. The counter is the index of
  the loop around the probes when that loop steps the optimizer and counts with `enumerate` or
  `range`; otherwise a new counter, set to 0 before the outermost loop and incremented right
  before the guard (a micro-batch index restarts every step, so it would not rate-limit).
  Expected: each probe's finding absent, or at a lower heat or severity.
- `move_after_loop`: the probes after the outermost loop of the step's function. Expected:
  each probe's finding absent, or at heat `once` (`epoch` where that function itself runs per
  epoch) and no higher severity.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.invariance.probed import Pair, Probed
from tests.realcode.invariance.splice import Splice, children
from tests.realcode.invariance.step import SCOPES

GUARD_INTERVAL = 100


def guard_probe(probed: Probed) -> Pair:
    step = probed.step
    splice = Splice(probed.parsed)
    counter = _loop_counter(step.inner_loop)
    before: list[cst.BaseStatement] = []
    if counter is None:
        counter = probed.names.fresh("probe_step")
        splice.insert_before(step.outer_loop, [cst.parse_statement(f"{counter} = 0\n")])
        before = [cst.parse_statement(f"{counter} += 1\n")]
    template = cst.parse_statement(f"if {counter} % {GUARD_INTERVAL} == 0:\n    pass\n")
    guard = template.with_changes(body=template.body.with_changes(body=list(step.probes), indent=None))
    splice.replace(step.probes[0], [*before, guard])
    for statement in step.probes[1:]:
        splice.remove(statement)
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, "guard_probe", probed.files, files, line_map, probed.probe_sites(),
                f"probes under `if {counter} % {GUARD_INTERVAL} == 0:`")


def _loop_counter(loop: cst.For | cst.While) -> str | None:
    """The loop's integer index when the loop itself steps an optimizer, else None."""
    if not isinstance(loop, cst.For) or not _steps_optimizer(loop):
        return None
    call = loop.iter
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
        return None
    if call.func.value == "range" and isinstance(loop.target, cst.Name):
        return loop.target.value
    if call.func.value == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements \
            and isinstance(loop.target.elements[0].value, cst.Name):
        return loop.target.elements[0].value.value
    return None


def _steps_optimizer(loop: cst.For) -> bool:
    stack = children(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "step":
            return True
        stack.extend(children(node))
    return False


def move_after_loop(probed: Probed) -> Pair:
    step = probed.step
    splice = Splice(probed.parsed)
    for statement in step.probes:
        splice.remove(statement)
    splice.insert_after(step.outer_loop, list(step.probes))
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, "move_after_loop", probed.files, files, line_map,
                probed.probe_sites(), f"probes after the loop at line {probed.parsed.lines(step.outer_loop)[0]}")

