"""The regular-expression scan for comments finds exactly what Python's tokenizer finds."""

from __future__ import annotations

import pytest

from verifier.static import comments
from verifier.static.comments import _scan, _tokenized

TRICKY = [
    "x = 1  # noqa: VP201\n",
    "s = '#'  # real\n",
    's = "# not a comment"\n',
    's = """\n# inside\n"""  # after\n',
    "s = '''a''''b'  # four quotes close, then a new string\n",
    's = r"\\""  # an escaped quote in a raw string\n',
    "s = 'it\\'s'  # escaped\n",
    "s = 'line \\\ncontinued # still string'  # comment\n",
    "f = f\"{x!r:>10} # no\"  # yes\n",
    "# don't stop at the apostrophe\nx = '#'\n",
    "call(a,  # one\n     b)  # two\n",
    '"""doc with \'\'\' and "" and \\""" inside"""  # end\n',
    "x = 1\n\n\t# tab then comment\n",
    "",
]


@pytest.mark.parametrize("text", TRICKY)
def test_scan_matches_the_tokenizer(text):
    assert _scan(text) == _tokenized(text)


def test_an_open_string_is_left_to_the_tokenizer():
    assert _scan("s = 'open\n# after\n") is None
    assert comments.comments("s = '''open\n# after\n", parsed=True) == []  # the tokenizer gives up


def test_unparsed_text_uses_the_tokenizer(monkeypatch):
    monkeypatch.setattr(comments, "_scan", lambda text: pytest.fail("scanned"))
    assert comments.comments("x = 1  # a\n") == [(1, 7, "# a")]


@pytest.mark.parametrize("parsed", [True, False], ids=["scan", "tokenizer"])
def test_lines_are_counted_as_python_counts_them(parsed):
    # A lone `\r` ends a line for Python, `\r\n` is one break, a form feed is none.
    text = "a = 1\rb = 2  # two\r\nc = 3  # three\rd = '\x0c'  # four\n"
    assert comments.comments(text, parsed=parsed) == [(2, 7, "# two"), (3, 7, "# three"), (4, 9, "# four")]
