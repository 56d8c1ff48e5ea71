"""Wrapping module-level loop code in `main()` behind `if __name__ == "__main__":`.

Only for a step at module level. The statements wrapped are the run of module-level statements
around the one holding the loop that can live in a function: no `def`, `class`, top-level
import, annotated assignment (a name `global` cannot declare), docstring, existing `__main__` guard, nor `exec`/`globals()`/`locals()`/`vars()` (whose
meaning depends on the scope). `main()` declares `global` the names it assigns that the rest of
the module reads or assigns (functions included), and those it reads before assigning, so every
variable stays the module's variable it was.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.invariance.dataflow import (
    SCOPE_DEPENDENT_CALLS,
    Unmovable,
    module_body_flow,
)
from tests.realcode.invariance.extract import BLANK, as_function_body
from tests.realcode.invariance.probed import NotApplicable, Pair, Probed
from tests.realcode.invariance.splice import Splice, walk


def wrap_main(probed: Probed) -> Pair:
    step = probed.step
    if not step.is_module_level:
        raise NotApplicable("the loop is not module-level code")
    body = list(probed.parsed.module.body)
    at = next(i for i, s in enumerate(body) if s is step.top)
    if not _movable(body[at], at):
        raise NotApplicable("the statement holding the loop cannot live in a function")
    first = at
    while first > 0 and _movable(body[first - 1], first - 1):
        first -= 1
    last = at
    while last + 1 < len(body) and _movable(body[last + 1], last + 1):
        last += 1
    statements = body[first:last + 1]
    try:
        read_first, written = module_body_flow(probed.names, statements)
    except Unmovable as why:
        raise NotApplicable(f"the module code cannot move into a function: {why}") from None
    start = probed.parsed.lines(statements[0])[0]
    end = probed.parsed.lines(statements[-1])[1]
    scope = probed.names.parsed_global_scope()
    shared = [n for n in written if n in read_first or probed.names.references_outside(scope, n, start, end)]
    name = probed.names.fresh("main")
    prologue = [cst.parse_statement(f"global {', '.join(shared)}\n")] if shared else []
    splice = Splice(probed.parsed)
    moved = as_function_body(splice, statements)
    template = cst.parse_statement(f"def {name}():\n    pass\n")
    function = template.with_changes(body=template.body.with_changes(body=[*prologue, *moved], indent=None),
                                     leading_lines=[BLANK, BLANK])
    guard = cst.parse_statement(f'if __name__ == "__main__":\n    {name}()\n').with_changes(
        leading_lines=[BLANK, BLANK])
    splice.replace(statements[0], [function, guard])
    for statement in statements[1:]:
        splice.remove(statement)
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, "wrap_main", probed.files, files, line_map, probed.probe_sites(),
                f"module lines {start}-{end} -> {name}() with global {', '.join(shared) or 'none'}")


def _movable(statement: cst.BaseStatement, index: int) -> bool:
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return False
    if isinstance(statement, cst.SimpleStatementLine):
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                return False
            if isinstance(small, cst.AnnAssign):  # an annotated name cannot be declared global
                return False
            if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                return False
    if isinstance(statement, cst.If) and "__name__" in cst.Module(body=[]).code_for_node(statement.test):
        return False
    for node in walk(statement):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in SCOPE_DEPENDENT_CALLS:
            return False
        if isinstance(node, (cst.Global, cst.Nonlocal, cst.ImportStar)):
            return False
    return True
