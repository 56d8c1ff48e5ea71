"""Qualified names through the module's imports, never the spelling of a call."""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from verifier.static.names import ImportTable, literal_string


def qualify(imports_code: str, expression: str) -> str | None:
    table = ImportTable()
    for statement in cst.parse_module(imports_code).body:
        for small in statement.body:
            table.add(small)
    return table.qualified_name(cst.parse_expression(expression))


@pytest.mark.parametrize(
    ("imports", "expression", "expected"),
    [
        ("import torch\n", "torch.cuda.synchronize", "torch.cuda.synchronize"),
        ("import torch as t\n", "t.cuda.synchronize", "torch.cuda.synchronize"),
        ("from torch.cuda import synchronize\n", "synchronize", "torch.cuda.synchronize"),
        ("from torch.cuda import synchronize as sync\n", "sync", "torch.cuda.synchronize"),
        ("from torch import cuda\n", "cuda.synchronize", "torch.cuda.synchronize"),
        ("import torch.nn.functional as F\n", "F.cross_entropy", "torch.nn.functional.cross_entropy"),
        ("import torch.nn\n", "torch.nn.Linear", "torch.nn.Linear"),
        ("from .utils import helper\n", "helper", ".utils.helper"),
        ("from . import utils\n", "utils.helper", ".utils.helper"),
        ("import numpy as np\n", "torch.stack", None),
    ],
)
def test_qualified_names(imports, expression, expected):
    assert qualify(imports, expression) == expected


def test_an_unimported_name_that_looks_like_torch_is_not_torch(analyse):
    findings = analyse(
        """
        class cuda:
            @staticmethod
            def synchronize():
                pass

        for x in loader:
            model(x).backward()
            cuda.synchronize()
        """
    )
    assert findings == []


def test_aliased_and_from_imported_synchronize_are_both_found(analyse):
    findings = analyse(
        """
        import torch as t
        from torch.cuda import synchronize

        for x in loader:
            model(x).sum().backward()
            t.cuda.synchronize()
            synchronize()
        """
    )
    assert findings == [("VP203", 7, "HIGH"), ("VP203", 8, "HIGH")]


@settings(max_examples=400, deadline=None)
@given(body=st.text(max_size=12), quotes=st.sampled_from(['"', "'", '"""', "'''"]), prefix=st.sampled_from(["", "r", "b", "u", "f"]))
@example(body="cuda:0", quotes='"', prefix="")
@example(body="", quotes='"""', prefix="")
@example(body="\\n", quotes="'", prefix="")
@example(body="\x00", quotes='"', prefix="")
def test_literal_string_is_what_the_literal_evaluates_to(body, quotes, prefix):
    """The shortcut for literals with nothing to unescape agrees with libcst's evaluation."""
    try:
        node = cst.parse_expression(prefix + quotes + body + quotes)
    except Exception:
        return
    if type(node) is not cst.SimpleString:
        return
    try:
        value = node.evaluated_value
    except Exception:
        value = None
    assert literal_string(node) == (value if isinstance(value, str) else None)
