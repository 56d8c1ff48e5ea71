"""Arbitrary text inside markdown: fences, code spans and table cells that cannot break out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from verifier.report.markdown_text import code_span, fenced_block, table_cell, table_row


def test_fence_is_longer_than_any_backtick_run_in_the_snippet():
    snippet = 'doc = """\n```python\nx = 1\n```\n"""'
    block = fenced_block(snippet, "python")
    assert block.startswith("````python\n")
    assert block.endswith("\n````")


def test_plain_snippet_gets_a_three_backtick_fence():
    assert fenced_block("x = 1\n", "python") == "```python\nx = 1\n```"


@given(st.text(alphabet="`ab\n ", max_size=40))
def test_no_line_inside_the_block_can_close_the_fence(text):
    block = fenced_block(text)
    fence = block.split("\n", 1)[0]
    inner = block.split("\n")[1:-1]
    assert not any(line.strip().startswith(fence) for line in inner)


def test_code_span_survives_backticks():
    assert code_span("a`b") == "``a`b``"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("path/train.py:12") == "`path/train.py:12`"


def test_table_cells_escape_pipes_and_fold_lines():
    assert table_cell("a | b\nc") == "a \\| b c"
    assert table_row(["x|y", 3]) == "| x\\|y | 3 |"
