"""What moving a run of loop-body statements into a function takes in and gives back, and when
it is refused."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tests.realcode.invariance.dataflow import (
    Names,
    Unmovable,
    module_body_flow,
    range_flow,
)
from tests.realcode.invariance.splice import Parsed


def _flow(source: str, first: int, last: int, **options):
    """The flow of statements first..last (0-based) of the first loop's body in `fit`."""
    parsed = Parsed("t.py", textwrap.dedent(source))
    names = Names.of(parsed)
    function = next(n for n in parsed.nodes if isinstance(n, cst.FunctionDef) and n.name.value == "fit")
    loop = next(n for n in parsed.nodes if isinstance(n, (cst.For, cst.While)))
    body = list(loop.body.body)[first:last + 1]
    return range_flow(names, names.scope_of(function.body.body[0]), body, **options)


LOOP = """
    import torch

    def fit(model, loader, optimizer):
        total = 0.0
        for x, y in loader:
            x = x.cuda()
            loss = model(x, y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(total)
        return loss
"""


def test_reads_before_writes_are_parameters_and_later_reads_are_outputs():
    flow = _flow(LOOP, 0, 4, rebound_each_iteration=frozenset({"x", "y"}))
    assert flow.params == ["x", "model", "y", "optimizer", "total"]
    # `loss` is read after the loop, `total` carried to the next iteration; `x` is rebound by the
    # loop header before any read, so it need not come back.
    assert flow.outputs == ["loss", "total"]
    assert flow.module_reads == []


def test_a_parameter_the_range_reassigns_comes_back_when_the_loop_does_not_rebind_it():
    flow = _flow(LOOP, 0, 1)
    assert flow.outputs == ["x", "loss"]


def test_module_names_are_read_as_globals():
    flow = _flow("""
        import torch

        def fit(batches):
            for batch in batches:
                torch.cuda.synchronize()
                print(len(batch))
    """, 0, 1)
    assert flow.params == ["batch"]
    assert flow.module_reads == ["torch"]


@pytest.mark.parametrize("body, why", [
    (["if x is None:", "    break"], "a `break` of the step's loop"),
    (["if x is None:", "    return x"], "a `return` leaves the step's function"),
    (["del x"], "`del x`"),
    (["print(locals())"], "`locals()` depends on the scope it runs in"),
    (["if x:", "    late = 1"], "`late` is read after the range but assigned only on some paths"),
    (["y = (z := x)"], "an assignment expression (`:=`)"),
])
def test_moves_that_would_change_behaviour_are_refused(body, why):
    lines = ["def fit(batches):", "    late = 0", "    for x in batches:"]
    lines += ["        " + line for line in body] + ["    print(late)", ""]
    with pytest.raises(Unmovable) as refused:
        _flow("\n".join(lines), 0, 0)
    assert str(refused.value) == why


def test_a_break_of_a_loop_inside_the_range_is_fine():
    flow = _flow("""
        def fit(batches, limit):
            for batch in batches:
                for item in batch:
                    if item > limit:
                        break
    """, 0, 0)
    assert flow.params == ["batch", "limit"]
    assert flow.outputs == []


def test_a_closure_defined_before_the_range_that_reads_what_it_assigns_is_refused():
    with pytest.raises(Unmovable, match="a function defined outside the range reads `scale`"):
        _flow("""
            def fit(batches):
                scale = 1.0
                def forward(b):
                    return b * scale
                for batch in batches:
                    scale = 2.0
                    forward(batch)
        """, 0, 1)


def _module(source: str):
    parsed = Parsed("t.py", textwrap.dedent(source))
    names = Names.of(parsed)
    loop = next(n for n in parsed.nodes if isinstance(n, cst.For))
    return parsed, names, loop


def test_module_level_code_keeps_reading_globals_and_passes_what_it_assigns_after_reading():
    parsed, names, loop = _module("""
        limit = 3
        steps = 0
        for batch in range(limit):
            seen = batch * limit
            steps += 1
        print(seen)
    """)
    flow = range_flow(names, names.parsed_global_scope(), list(loop.body.body),
                      rebound_each_iteration=frozenset({"batch"}))
    # `limit` stays a global read; `steps` is assigned, so it must come in and go back out.
    assert flow.params == ["steps"]
    assert flow.module_reads == ["batch", "limit"]
    assert flow.outputs == ["seen", "steps"]
    read_first, written = module_body_flow(names, list(parsed.module.body[1:]))
    assert read_first == ["limit", "seen"]
    assert written == ["steps", "batch", "seen"]


def test_module_level_code_that_a_function_reads_is_refused():
    _, names, loop = _module("""
        def progress():
            return steps

        steps = 0
        for batch in range(3):
            steps += 1
            progress()
    """)
    with pytest.raises(Unmovable) as refused:
        range_flow(names, names.parsed_global_scope(), list(loop.body.body))
    assert str(refused.value) == "a function defined outside the range reads `steps`, which the range assigns"
