"""Qualified names through the module's imports, never the spelling of a call."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.static.names import ImportTable


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
