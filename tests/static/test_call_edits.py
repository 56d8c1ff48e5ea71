"""Arguments a fix adds to a call go in in the call's own layout, and nothing else moves."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.static.call_edits import (
    append_argument,
    holds_comment,
    keyword_argument,
    positional_as_keywords,
    prepend_arguments,
    without_arguments,
)


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


DEVICE = keyword_argument("device", cst.Name("dev"))
CUDA = cst.Arg(cst.SimpleString('"cuda"'))


@pytest.mark.parametrize(
    ("call", "appended", "prepended"),
    [
        ("f()", "f(device=dev)", 'f("cuda")'),
        ("f(a, b)", "f(a, b, device=dev)", 'f("cuda", a, b)'),
        ("f( a )", "f( a, device=dev )", 'f( "cuda", a )'),
        ("f(a,)", "f(a, device=dev,)", 'f("cuda", a,)'),
        # One argument per line: the new one gets its own line, indented like the others.
        ("f(\n    a,\n    b,\n)", "f(\n    a,\n    b,\n    device=dev,\n)", 'f(\n    "cuda",\n    a,\n    b,\n)'),
        ("f(\n    a,\n)", "f(\n    a,\n    device=dev,\n)", 'f(\n    "cuda",\n    a,\n)'),
        # Without a trailing comma the closing parenthesis keeps its own line.
        ("f(\n    a,\n    b\n)", "f(\n    a,\n    b,\n    device=dev\n)", 'f(\n    "cuda",\n    a,\n    b\n)'),
    ],
)
def test_an_added_argument_follows_the_layout_of_the_call(call, appended, prepended):
    parsed = cst.parse_expression(call)
    assert code(append_argument(parsed, DEVICE)) == appended
    assert code(prepend_arguments(parsed, [CUDA])) == prepended


def test_positional_arguments_are_named_in_order_and_keep_their_spacing():
    call = cst.parse_expression("autocast(True,  torch.bfloat16, cache_enabled=False)")
    named = positional_as_keywords(call, ("enabled", "dtype", "cache_enabled"))
    assert code(named) == "autocast(enabled=True,  dtype=torch.bfloat16, cache_enabled=False)"


@pytest.mark.parametrize("call", ["autocast(True, None, True, 1)", "autocast(*options)"])
def test_positional_arguments_beyond_the_names_or_starred_give_nothing(call):
    assert positional_as_keywords(cst.parse_expression(call), ("enabled", "dtype", "cache_enabled")) is None


def test_without_arguments_also_drops_the_space_inside_the_parentheses():
    assert code(without_arguments(cst.parse_expression("opt.zero_grad( set_to_none=False )"))) == "opt.zero_grad()"


def test_a_comment_is_found_wherever_it_sits():
    call = cst.parse_expression("opt.zero_grad(\n    set_to_none=False,  # keep zeros for the clipping hook\n)")
    assert holds_comment(*call.args)
    assert not holds_comment(call.func, None)
