"""Parsing without libcst's node re-validation builds the same tree, and leaves validation on."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import libcst as cst
import pytest

from verifier.static.parse import _constructor_without_check, parse_module

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


REPOSITORY = Path(__file__).resolve().parents[2]


def _our_python_files() -> list[Path]:
    return sorted(
        path for folder in ("verifier", "rules", "tests/corpus", "examples") for path in (REPOSITORY / folder).rglob("*.py")
    )


def test_same_trees_as_libcst_across_the_repository():
    """Every file here, from this module's parse and libcst's own: the same trees."""
    files = _our_python_files()
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert parse_module(text).deep_equals(cst.parse_module(text)), path


def test_parsed_nodes_stay_frozen_and_libcst_builds_checked_nodes_again():
    node = parse_module(SOURCE).body[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.leading_lines = ()
    built = cst.Integer("1", lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    assert (built.value, len(built.lpar), len(built.rpar)) == ("1", 1, 1)
    with pytest.raises(cst.CSTValidationError):  # libcst's own constructor, which checks, is back
        cst.Integer("1", lpar=[cst.LeftParen()])


def test_a_node_class_whose_post_init_does_more_than_check_keeps_its_constructor():
    @dataclasses.dataclass(frozen=True)
    class Tagged(cst.Name):
        def __post_init__(self) -> None:
            super().__post_init__()

    assert _constructor_without_check(Tagged, Tagged.__dict__["__init__"]) is None
    assert _constructor_without_check(cst.Name, cst.Name.__dict__["__init__"]) is not None


def test_an_unchecked_constructor_stores_slotted_and_unslotted_fields_alike():
    """Fields with a slot are stored through it; a subclass field without one (kept in the
    instance's `__dict__`) goes through `object.__setattr__`, as the dataclass constructor does."""

    @dataclasses.dataclass(frozen=True)
    class Tagged(cst.Name):
        tag: str = "plain"

    unchecked = _constructor_without_check(Tagged, Tagged.__dict__["__init__"])
    node = object.__new__(Tagged)
    unchecked(node, "x", tag="loop")
    assert (node.value, node.lpar, node.rpar, node.tag) == ("x", (), (), "loop")
    assert node.__dict__ == {"tag": "loop"}
    assert node.deep_equals(Tagged("x", tag="loop"))
