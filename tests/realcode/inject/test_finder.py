"""The training-loop finder, on fixtures written for it and on the backward spellings it knows."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.realcode.inject.finder import find_training_loops, insertion_point_at, optimizer_step_after

FIXTURES = Path(__file__).parent / "fixtures"


def _source(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if line.strip() == text)


def test_module_level_script_loop():
    source = _source("train_script.py")
    (point,) = find_training_loops(source, "train_script.py")
    assert point.statement_line == point.statement_end_line == _line_of(source, "scaler.scale(loss).backward()")
    assert point.subject == "loss"
    assert point.indent == " " * 8
    assert point.loop_line == _line_of(source, "for micro in range(accumulation):")
    # Set-up code goes before the outermost loop of the scope, which is also the top-level statement.
    assert point.outer_loop_line == point.top_level_line == _line_of(source, "while step < steps:")
    assert point.outer_loop_indent == ""
    assert point.block_end_line == point.statement_line  # the backward ends the accumulation loop
    assert point.function is None and not point.function_is_method


def test_method_loop_in_a_two_space_file():
    source = _source("trainer_class.py")
    (point,) = find_training_loops(source, "trainer_class.py")
    assert point.statement_line == _line_of(source, "loss.backward()")
    assert point.function == "Trainer.fit" and point.function_is_method and point.self_name == "self"
    assert point.class_name == "Trainer" and point.class_body_indent == "  "
    assert point.indent_unit == "  "
    assert point.init_end_line == _line_of(source, "self.epochs = epochs")
    assert point.init_body_indent == "    "
    assert point.class_end_line == len(source.splitlines())
    assert point.block_end_line == _line_of(source, 'print("diverged")')
    assert point.outer_loop_line == _line_of(source, "for epoch in range(self.epochs):")


@pytest.mark.parametrize(
    "statement, subject",
    [
        ("loss.backward()", "loss"),
        ("loss.backward(retain_graph=True)", "loss"),
        ("self.loss.backward()", "self.loss"),
        ("scaler.scale(loss).backward()", "loss"),
        ("accelerator.backward(loss)", "loss"),
        ("fabric.backward(loss)", "loss"),
        ("self.manual_backward(loss)", "loss"),
        ("(loss / accumulation).backward()", None),
        ("fabric.backward(loss / accumulation)", None),
    ],
)
def test_backward_spellings(statement, subject):
    source = f"for batch in loader:\n    loss = model(batch)\n    {statement}\n    optimizer.step()\n"
    (point,) = find_training_loops(source)
    assert (point.statement_line, point.subject) == (3, subject)


def test_backward_under_with_in_the_loop_is_found_at_its_own_indentation():
    source = textwrap.dedent("""\
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(batch).loss
                accelerator.backward(loss)
                optimizer.step()
        """)
    (point,) = find_training_loops(source)
    assert (point.statement_line, point.indent, point.block_end_line) == (4, " " * 8, 5)


@pytest.mark.parametrize(
    "source",
    [
        "loss = model(x)\nloss.backward()\n",
        "for batch in loader:\n    def closure():\n        loss = model(batch)\n        loss.backward()\n        return loss\n"
        "    optimizer.step(closure)\n",
        "for batch in loader:\n    if ok: loss.backward()\n",
    ],
    ids=["outside-a-loop", "in-a-closure", "one-line-if"],
)
def test_not_a_training_loop_statement(source):
    assert find_training_loops(source) == []


def test_table_line_with_a_subject_for_a_statement_that_is_not_a_backward():
    source = "for batch in loader:\n    loss = forward(batch)\n    run_backward(loss)\n"
    point = insertion_point_at(source, 3, "train.py", subject="loss")
    assert (point.statement_line, point.subject) == (3, "loss")
    with pytest.raises(LookupError):
        insertion_point_at(source, 3, "train.py")  # no subject: the call is not a backward
    with pytest.raises(LookupError):
        insertion_point_at(source, 1, "train.py", subject="loss")  # the loop header, not a body statement


def test_optimizer_step_anchor_is_the_first_step_after_the_backward_in_the_same_loop_nest():
    source = _source("train_script.py")
    (backward,) = find_training_loops(source, "train_script.py")
    step = optimizer_step_after(source, backward)
    assert step.statement_line == _line_of(source, "scaler.step(optimizer)")
    assert step.subject == "loss"
    assert step.loop_line == step.outer_loop_line == _line_of(source, "while step < steps:")


def test_no_optimizer_step_anchor_where_the_step_is_in_a_closure_before_the_backward():
    source = textwrap.dedent("""
        def fit(model, batches, optimizer):
            for batch in batches:
                def update():
                    optimizer.step()
                loss = model(batch)
                loss.backward()
                update()
    """)
    (backward,) = find_training_loops(source)
    assert optimizer_step_after(source, backward) is None
