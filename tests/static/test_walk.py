"""The read-only walk: evaluation order, hooks by node type, leaves nobody asks for skipped."""

from __future__ import annotations

import libcst as cst

from verifier.static.walk import walk


def test_hooked_leaves_are_visited_in_evaluation_order_and_left_after_their_children():
    module = cst.parse_module("total = total + loss.item()\nfor x in loader:\n    step(x)\n")
    events: list[str] = []
    visitors = {
        cst.Name: [lambda node: events.append(node.value)],
        cst.Call: [lambda node: events.append("call(")],
    }
    leavers = {cst.Call: [lambda node: events.append(")")], cst.Assign: [lambda node: events.append("=")]}
    walk(module, visitors, leavers)
    # The value of an assignment is read before its target is bound.
    assert events == ["total", "call(", "loss", "item", ")", "total", "=", "x", "loader", "call(", "step", "x", ")"]


def test_a_walk_without_hooks_for_a_node_type_never_calls_anything_for_it():
    module = cst.parse_module("a = [b for b in c if d]\n")
    seen: list[str] = []
    walk(module, {cst.Assign: [lambda node: seen.append("assign")]}, {})
    assert seen == ["assign"]
