"""Lists that live for the whole run: bound once at module level to `[]` and never cut.

A list handed to a helper as an argument (`train_step(..., history)`) grows for the run when the
caller's module made it once at module level and nothing in that module clears, trims or rebinds
it. The call binding (`bindings.py`) passes that fact to the helper's parameter, so VP402 judges
the helper's `history.append(loss)` as it would the same line inline. Read off the module's text
and top-level statements, once per module.
"""

from __future__ import annotations

import re

import libcst as cst

from verifier.static.names import dotted_name

# Ways a list is cut or replaced: a trimming method, `del h[...]`, an item or slice assignment,
# a rebinding (a second `h =`), or a `global h` that lets a function rebind it.
_CUTS = r"\b{name}\s*\.\s*(?:clear|pop|remove)\s*\(|\bdel\s+{name}\s*\[|\b{name}\s*\[[^\]\n]*\]\s*=(?!=)|\bglobal\b[^\n]*\b{name}\b"
_BINDINGS = r"(?<![.\w]){name}\s*(?::[^=\n]*)?=(?!=)"


def run_long_lists(module: cst.Module, text: str) -> frozenset[str]:
    """Module-level names bound once to an empty list and never cut anywhere in the module."""
    candidates = []
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is cst.Assign and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif type(small) is cst.AnnAssign and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            name = dotted_name(target) if is_new_list(value) else None
            if name is not None and "." not in name:
                candidates.append(name)
    found = set()
    for name in candidates:
        escaped = re.escape(name)
        if re.search(_CUTS.format(name=escaped), text):
            continue
        if len(re.findall(_BINDINGS.format(name=escaped), text)) != 1:
            continue
        found.add(name)
    return frozenset(found)


def is_new_list(value: cst.BaseExpression) -> bool:
    """`[]` or `list()`: a fresh, empty list."""
    if type(value) is cst.List:
        return not value.elements
    return type(value) is cst.Call and dotted_name(value.func) == "list" and not value.args
