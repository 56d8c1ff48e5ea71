"""Which fixes go together: only those the run allows, never two that overlap, in an order that
depends on positions and codes only."""

from __future__ import annotations

from verifier.findings import Autofix, Edit, Finding
from verifier.fixes.plan import choose_fixes


def finding(path: str, code: str, span: tuple[int, int, int, int], *, safe: bool = True) -> Finding:
    line, column, end_line, end_column = span
    edit = Edit("Call", line, column, end_line, end_column, "old()", "new()")
    return Finding(path, line, column, code, autofix=Autofix(f"fix {code}", safe, (edit,)))


# `with torch.cuda.amp.autocast(enabled=torch.ones(1).to(device).bool().item()):` - VP308's call
# holds VP104's: fixing one changes the text the other's edit was made for.
OUTER = finding("train.py", "VP308", (4, 10, 4, 80))
INNER = finding("train.py", "VP104", (4, 42, 4, 66), safe=False)
LATER = finding("train.py", "VP405", (6, 5, 6, 43), safe=False)
OTHER_FILE = finding("eval.py", "VP308", (2, 10, 2, 40))


def test_of_two_overlapping_fixes_the_one_that_starts_first_is_chosen_whatever_the_order():
    for order in ([OUTER, INNER, LATER], [LATER, INNER, OUTER]):
        assert choose_fixes(order, unsafe=True) == {"train.py": [OUTER, LATER]}


def test_fixes_that_only_touch_are_applied_together():
    left = finding("train.py", "VP104", (3, 5, 3, 20), safe=False)
    right = finding("train.py", "VP104", (3, 20, 3, 30), safe=False)
    assert choose_fixes([right, left], unsafe=True) == {"train.py": [left, right]}


def test_unsafe_fixes_wait_for_unsafe_fixes_to_be_allowed():
    assert choose_fixes([OUTER, INNER, LATER, OTHER_FILE], unsafe=False) == {
        "eval.py": [OTHER_FILE], "train.py": [OUTER],
    }


def test_skipped_files_and_findings_without_a_fix_are_left_out():
    plain = Finding("train.py", 8, 5, "VP201")
    assert choose_fixes([OUTER, plain, OTHER_FILE], unsafe=True, skip={"train.py"}) == {"eval.py": [OTHER_FILE]}
