"""Parsing without libcst's node re-validation builds the same tree, and leaves validation on."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.static.parse import parse_module

SOURCE = '''
import torch

@torch.no_grad()
def evaluate(model, loader, *, device="cuda"):
    total = 0
    for x, y in loader:
        total += (model(x.to(device)).argmax(-1) == y).sum().item()  # noqa: VP201
    return f"{total = }"
'''


def test_same_tree_as_libcst():
    assert parse_module(SOURCE).deep_equals(cst.parse_module(SOURCE))
    assert parse_module(SOURCE).code == SOURCE


def test_validation_is_back_on_after_a_parse():
    parse_module(SOURCE)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_validation_is_back_on_after_a_syntax_error():
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
