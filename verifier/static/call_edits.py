"""Rewriting a call's arguments for a fix, in the layout the code already has.

An argument added to a call written on one line goes in as `, name=value`; in a call with one
argument per line it gets a line of its own, indented like the others, and a trailing comma stays
where it was. Comments inside the arguments that are kept stay with them; a fix that would drop
code holding a comment is not offered (`holds_comment`).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")


def keyword_argument(name: str, value: cst.BaseExpression) -> cst.Arg:
    """`name=value`, spaced as keyword arguments are (PEP 8: no spaces around `=`)."""
    return cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(_NO_SPACE, _NO_SPACE))


def prepend_arguments(call: cst.Call, added: Sequence[cst.Arg]) -> cst.Call:
    """`call` with `added` before its own arguments."""
    return _arranged(call, [*((arg, None) for arg in added), *_originals(call)])


def append_argument(call: cst.Call, added: cst.Arg) -> cst.Call:
    """`call` with `added` after its own arguments."""
    return _arranged(call, [*_originals(call), (added, None)])


def positional_as_keywords(call: cst.Call, names: Sequence[str]) -> cst.Call | None:
    """`call` with its positional arguments named, in order, by `names`; None when it has more
    positional arguments than names, or a starred one."""
    items = []
    position = 0
    for arg, index in _originals(call):
        if arg.star:
            return None
        if arg.keyword is None:
            if position >= len(names):
                return None
            arg = arg.with_changes(keyword=cst.Name(names[position]), equal=cst.AssignEqual(_NO_SPACE, _NO_SPACE))
            position += 1
        items.append((arg, index))
    return _arranged(call, items)


def without_arguments(call: cst.Call) -> cst.Call:
    """`call()`: every argument and the space between the parentheses removed."""
    return call.with_changes(args=(), whitespace_before_args=_NO_SPACE)


def holds_comment(*nodes: cst.CSTNode | None) -> bool:
    """Whether any of `nodes` contains a comment (which a fix dropping them would lose)."""
    finder = _CommentFinder()
    for node in nodes:
        if node is not None:
            node.visit(finder)
    return finder.found


class _CommentFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Comment(self, node: cst.Comment) -> bool:
        self.found = True
        return False


def _originals(call: cst.Call) -> list[tuple[cst.Arg, int | None]]:
    return [(arg, index) for index, arg in enumerate(call.args)]


def _arranged(call: cst.Call, items: list[tuple[cst.Arg, int | None]]) -> cst.Call:
    """The call with these arguments (each with its index among the call's own, or None if new),
    commas laid out as the call laid out its own: a separator between two of its arguments keeps
    its place, new gaps get the call's separator, and the last argument gets the call's trailing
    comma (or none) and the space before the closing parenthesis."""
    own = call.args
    trailing = own[-1].comma if own else cst.MaybeSentinel.DEFAULT
    closing = own[-1].whitespace_after_arg if own else _NO_SPACE
    separator = _separator(call)
    arranged = []
    for position, (arg, index) in enumerate(items):
        if position == len(items) - 1:
            arg = arg.with_changes(comma=trailing, whitespace_after_arg=closing)
        elif index is not None and index < len(own) - 1 and isinstance(own[index].comma, cst.Comma):
            arg = arg.with_changes(comma=own[index].comma)
        else:
            arg = arg.with_changes(comma=separator, whitespace_after_arg=_NO_SPACE)
        arranged.append(arg)
    return call.with_changes(args=arranged)


def _separator(call: cst.Call) -> cst.Comma:
    """The comma between two arguments in this call's layout: the one it already uses, else a
    line break with the first argument's indentation (one argument on a line of its own), else `, `."""
    own = call.args
    if len(own) >= 2 and isinstance(own[0].comma, cst.Comma):
        return own[0].comma
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=call.whitespace_before_args)
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
