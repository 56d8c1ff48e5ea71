"""Suppression comments applied centrally: verify-perf: ignore[...] and noqa."""

from __future__ import annotations

import pytest

from verifier.static.suppression import suppressed_codes

LOOP = """
for x in loader:
    loss = model(x).sum()
    loss.backward()
    print(loss.item()){comment}
"""


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("", [("VP201", 5, "MEDIUM")]),
        ("  # verify-perf: ignore[VP201]", []),
        ("  # verify-perf: ignore[sync-in-hot-loop]", []),
        ("  # verify-perf: ignore", []),
        ("  # noqa: VP201", []),
        ("  # noqa", []),
        ("  # noqa: E501", [("VP201", 5, "MEDIUM")]),
        ("  # verify-perf: ignore[VP202]", [("VP201", 5, "MEDIUM")]),
    ],
)
def test_suppression_comments(analyse, comment, expected):
    assert analyse(LOOP.format(comment=comment)) == expected


def test_directive_parsing():
    assert suppressed_codes("x()  # noqa: VP201, VP202") == {"VP201", "VP202"}
    assert suppressed_codes("x()  # verify-perf: ignore[VP201,VP305]") == {"VP201", "VP305"}
    assert suppressed_codes("x()  # verify-perf: ignore") == set()
    assert suppressed_codes("x()  # a plain comment") is None
