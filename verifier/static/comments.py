"""Comments of Python source found by one regular expression instead of the tokenizer.

Before Python 3.12, `tokenize` is pure Python and costs a tenth of libcst's whole parse on a
file; finding the comments that may hold a suppression only needs to know where strings and
comments start and end. Outside strings and comments every quote opens a string and every
`#` opens a comment, so one left-to-right scan over string and comment literals finds the
same comments as the tokenizer, at C speed. Source that parsed is assumed; anything the scan
cannot vouch for (a string left open) falls back to the tokenizer. Both read the text with every
line break Python counts (`\\r\\n`, a lone `\\r`, `\\n`) written as `\\n`, so a comment's line is
Python's line even after a stray carriage return.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize

from verifier.static.source import with_newlines

# Strings as unrolled loops: each character can be consumed in exactly one way, so backtracking
# cannot change where a string ends (nor take long). A quote that opens no string is `open`.
_TRIPLE = r"{q}{q}{q}[^{q}\\]*(?:(?:\\.|{q}(?!{q}{q}))[^{q}\\]*)*{q}{q}{q}"
_SINGLE = r"{q}[^{q}\\\n]*(?:\\.[^{q}\\\n]*)*{q}"
# The lookahead lets the engine skip to the next quote or `#` at once (twice as fast).
_LITERALS = re.compile(
    "(?=[#'\"])(?:(?P<string>" + "|".join(form.format(q=q) for form in (_TRIPLE, _SINGLE) for q in "'\"") + ")"
    + r"|(?P<comment>#[^\n]*)|(?P<open>['\"]))",
    re.DOTALL,
)
# From 3.12 the tokenizer is CPython's own (fast), and f-strings may nest the same quotes.
_SCAN = sys.version_info < (3, 12)


def comments(text: str, parsed: bool = False) -> list[tuple[int, int, str]]:
    """(line, 0-based column, text) of every comment; a `#` inside a string is not one.

    `parsed`: the text is valid Python (libcst parsed it), so the scan may stand in for the
    tokenizer; otherwise the tokenizer decides (it gives up on some invalid text).
    """
    text = with_newlines(text)
    if parsed and _SCAN:
        found = _scan(text)
        if found is not None:
            return found
    return _tokenized(text)


def _scan(text: str) -> list[tuple[int, int, str]] | None:
    found = []
    line, line_start = 1, 0
    count = text.count
    for match in _LITERALS.finditer(text):
        kind = match.lastgroup
        if kind == "comment":
            start = match.start()
            line += count("\n", line_start, start)
            line_start = text.rfind("\n", 0, start) + 1
            found.append((line, start - line_start, match.group()))
        elif kind == "open":
            return None
    return found


def _tokenized(text: str) -> list[tuple[int, int, str]]:
    try:
        return [
            (token.start[0], token.start[1], token.string)
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Text the tokenizer refuses was not analysed either; only a VP900 comes from it.
        return []
