"""The splice keeps untouched and moved nodes as they were, and its line map follows them."""

from __future__ import annotations

import libcst as cst
import pytest

from tests.realcode.invariance.splice import Parsed, Splice, code_and_positions

SOURCE = '''\
import torch


def fit(model, batches):
    for x, y in batches:
        # forward
        loss = model(x, y)
        loss.backward()
        if loss > (
            3
        ):
            print("high")
    return model
'''


def _statement(parsed: Parsed, line: int) -> cst.BaseStatement:
    return next(node for node in parsed.nodes if isinstance(node, cst.BaseStatement)
                and parsed.lines(node)[0] == line)


def test_untouched_file_renders_the_same_text_and_maps_statement_lines_onto_themselves():
    parsed = Parsed("fit.py", SOURCE)
    files, line_map = Splice(parsed).render()
    assert files == {"fit.py": SOURCE}
    # Statements and compound headers (the `if` test spans three lines) map; the comment and
    # blank lines between statements do not.
    assert sorted(line for (_, line), target in line_map.items() if target == ("fit.py", line)) == \
        [1, 4, 5, 7, 8, 9, 10, 11, 12, 13]
    assert ("fit.py", 6) not in line_map and ("fit.py", 2) not in line_map


def test_moving_a_statement_under_a_new_if_maps_its_lines_there():
    parsed = Parsed("fit.py", SOURCE)
    backward = _statement(parsed, 8)
    guard = cst.parse_statement("if x is not None:\n    pass\n")
    splice = Splice(parsed)
    splice.replace(backward, [guard.with_changes(body=guard.body.with_changes(body=[backward]))])
    files, line_map = splice.render()
    assert files["fit.py"].splitlines()[7:9] == ["        if x is not None:", "            loss.backward()"]
    assert line_map[("fit.py", 8)] == ("fit.py", 9)
    assert line_map[("fit.py", 9)] == ("fit.py", 10)
    assert line_map[("fit.py", 13)] == ("fit.py", 14)


def test_removed_statement_maps_to_nothing_unless_pinned():
    parsed = Parsed("fit.py", SOURCE)
    forward = _statement(parsed, 7)
    splice = Splice(parsed)
    splice.remove(forward)
    _, line_map = splice.render()
    assert line_map[("fit.py", 7)] is None
    # The comment above a statement belongs to it and goes with it.
    assert line_map[("fit.py", 8)] == ("fit.py", 6)

    splice = Splice(parsed)
    first = cst.parse_statement("out = model(x, y)\n").with_changes(leading_lines=forward.leading_lines)
    second = cst.parse_statement("loss = out\n")
    splice.replace(forward, [first, second])
    splice.pin(forward, first)
    files, line_map = splice.render()
    assert files["fit.py"].splitlines()[6:8] == ["        out = model(x, y)", "        loss = out"]
    assert line_map[("fit.py", 7)] == ("fit.py", 7)
    assert line_map[("fit.py", 8)] == ("fit.py", 9)


def test_moving_into_another_file_maps_across_files():
    parsed = Parsed("fit.py", SOURCE)
    backward = _statement(parsed, 8)
    template = cst.parse_statement("def step(loss):\n    pass\n")
    helper = cst.Module(body=[template.with_changes(body=template.body.with_changes(body=[backward]))])
    splice = Splice(parsed)
    splice.replace(backward, [cst.parse_statement("step(loss)\n")])
    splice.add_file("helpers.py", helper)
    files, line_map = splice.render()
    assert files["helpers.py"] == "def step(loss):\n    loss.backward()\n"
    assert line_map[("fit.py", 8)] == ("helpers.py", 2)


def test_a_node_can_be_replaced_only_once():
    parsed = Parsed("fit.py", SOURCE)
    splice = Splice(parsed)
    splice.remove(_statement(parsed, 8))
    with pytest.raises(ValueError, match="replaced twice"):
        splice.remove(_statement(parsed, 8))


def test_code_and_positions_match_libcst():
    module = cst.parse_module(SOURCE)
    code, positions = code_and_positions(module)
    assert code == SOURCE
    assert positions[module.body[1]].start.line == 4
    assert positions[module.body[1]].end.line == 13
