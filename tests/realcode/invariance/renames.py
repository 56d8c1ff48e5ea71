"""Renaming a local variable: the loss, the model, the loop variable.

Every binding and every read of the name in the scope that owns it is renamed (reads from
nested functions and f-strings included, other scopes' variables of the same spelling left
alone), to a name the file does not use. Lines do not move. A parameter is renamed only when
no other module that imports the file could pass it by keyword; the file's own calls that
pass it by keyword are renamed with it.
"""

from __future__ import annotations

import os
import re

import libcst as cst
from libcst.metadata import GlobalScope, Scope

from tests.realcode.inject.finder import dotted_name
from tests.realcode.invariance.probed import NotApplicable, Pair, Probed
from tests.realcode.invariance.splice import identity_map, walk
from tests.realcode.invariance.step import loss_statement, statement_nodes

# Methods only modules have: evidence that a called name is a model, not a loss function.
MODULE_METHODS = frozenset({"parameters", "named_parameters", "train", "eval", "zero_grad", "state_dict"})


def rename_loss(probed: Probed) -> Pair:
    subject = probed.subject
    if "." in subject:
        raise NotApplicable(f"the loss is an attribute (`{subject}`), not a local variable")
    return _rename(probed, "rename_loss", {subject: probed.names.fresh("objective")})


def rename_model(probed: Probed) -> Pair:
    model = model_name(probed)
    if model is None:
        raise NotApplicable("no local name of a module is called to make the loss")
    return _rename(probed, "rename_model", {model: probed.names.fresh("net")})


def rename_loop_variable(probed: Probed) -> Pair:
    loop = next((loop for loop in probed.step.loops if isinstance(loop, cst.For)), None)
    if loop is None:
        raise NotApplicable("no `for` loop around the step")
    bound = [n.value for n in _target_names(loop.target)]
    if not bound:
        raise NotApplicable("the loop binds no plain name")
    taken: set[str] = set()
    renames = {}
    for name in bound:
        renames[name] = probed.names.fresh(f"{name.strip('_') or 'item'}_v", taken)
        taken.add(renames[name])
    return _rename(probed, "rename_loop_variable", renames)


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    return []


def model_name(probed: Probed) -> str | None:
    """The called name whose result flows into the loss and that has a module's methods.

    Followed back from the loss statement through the assignments of the step's loops, at
    most three steps (`loss = criterion(output, y)` <- `output = model(x)`).
    """
    step = probed.step
    statement = loss_statement(step)
    if statement is None:
        return None
    evidence = _module_names(step.module)
    assignments = _assignments_before(probed)
    frontier = [statement.body[0].value]
    seen: set[str] = set()
    for _ in range(3):
        reads: list[str] = []
        for expression in frontier:
            for node in walk(expression):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in evidence:
                    return node.func.value
                if isinstance(node, cst.Name) and node.value not in seen:
                    seen.add(node.value)
                    reads.append(node.value)
        frontier = [assignments[name] for name in reads if name in assignments]
    return None


def _module_names(root: cst.CSTNode) -> set[str]:
    found = set()
    for node in walk(root):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in MODULE_METHODS and isinstance(node.func.value, cst.Name):
            found.add(node.func.value.value)
    return found


def _assignments_before(probed: Probed) -> dict[str, cst.BaseExpression]:
    """name -> the value last assigned to it in the step's loops before the anchor."""
    step = probed.step
    anchor_line = step.parsed.lines(step.anchor)[0]
    found: dict[str, tuple[int, cst.BaseExpression]] = {}
    for statement in statement_nodes(step.outer_loop):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        line = step.parsed.lines(statement)[0]
        if line >= anchor_line:
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    for name in _target_names(target.target):
                        if name.value not in found or found[name.value][0] < line:
                            found[name.value] = (line, small.value)
    return {name: value for name, (_, value) in found.items()}


def _rename(probed: Probed, kind: str, renames: dict[str, str]) -> Pair:
    nodes: dict[int, str] = {}
    for old, new in renames.items():
        scope = _owner_scope(probed, old)
        for key in _binding_and_read_nodes(probed, scope, old):
            nodes[key] = new
    text = probed.parsed.module.visit(_Renamer(nodes)).code
    if text.count("\n") != probed.text.count("\n"):
        raise AssertionError("a renaming moved lines")
    compile(text, probed.path, "exec")
    note = ", ".join(f"{old} -> {new}" for old, new in renames.items())
    return Pair(probed.label, probed.target.repo, kind, probed.files, {probed.path: text},
                identity_map(probed.path, probed.text), probed.probe_sites(), note)


def _owner_scope(probed: Probed, name: str) -> Scope:
    """The scope that binds `name` as the step reads it."""
    scope = probed.step.scope
    while scope is not None and name not in scope.assignments:
        if isinstance(scope, GlobalScope):
            scope = None
            break
        scope = scope.parent
    if scope is None:
        raise NotApplicable(f"`{name}` is not bound in the file")
    return scope


def _binding_and_read_nodes(probed: Probed, scope: Scope, name: str) -> set[int]:
    nodes: set[int] = set()
    for assignment in scope.assignments[name]:
        node = assignment.node
        if isinstance(node, cst.Name):
            nodes.add(id(node))
        elif isinstance(node, cst.Param):
            nodes |= _keyword_nodes(probed, scope, name)
            nodes.add(id(node.name))
        else:
            raise NotApplicable(f"`{name}` is bound by a {type(node).__name__}")
        nodes |= {id(access.node) for access in assignment.references}
    if isinstance(scope, GlobalScope):
        # `global name` statements in functions name the same variable.
        for node in iter(probed.parsed.nodes):
            if isinstance(node, cst.Global):
                nodes |= {id(item.name) for item in node.names if item.name.value == name}
    return nodes


def _keyword_nodes(probed: Probed, scope: Scope, name: str) -> set[int]:
    """The `name=` keywords of calls in the file to the function whose parameter is renamed.

    A call from another module that imports this one could pass it too: then the parameter is
    not renamed.
    """
    function = next((f for f in iter(probed.parsed.nodes) if isinstance(f, cst.FunctionDef)
                     and probed.names.scope_of(f.body.body[0]) is scope), None)
    if function is None:
        raise NotApplicable(f"`{name}` is a parameter of a lambda")
    nodes = set()
    for node in iter(probed.parsed.nodes):
        if isinstance(node, cst.Call) and _callee(node) == function.name.value:
            if any(arg.star == "**" for arg in node.args):
                raise NotApplicable(f"a call passes `**kwargs` to {function.name.value}()")
            nodes |= {id(arg.keyword) for arg in node.args if arg.keyword is not None and arg.keyword.value == name}
    module = os.path.splitext(probed.path)[0].replace(os.sep, ".")
    importer = re.compile(rf"^\s*(from|import)\s+[\w.]*\b{re.escape(module.rsplit('.', 1)[-1])}\b", re.MULTILINE)
    keyword_use = re.compile(rf"\b{re.escape(function.name.value)}\b[\s\S]{{0,400}}?\b{re.escape(name)}\s*=(?!=)")
    for folder, _, files in os.walk(probed.repo_root):
        for file in files:
            path = os.path.join(folder, file)
            if not file.endswith(".py") or os.path.relpath(path, probed.repo_root) == probed.path:
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            if importer.search(text) and keyword_use.search(text):
                raise NotApplicable(f"{os.path.relpath(path, probed.repo_root)} may pass `{name}=` "
                                    f"to {function.name.value}()")
    return nodes


def _callee(call: cst.Call) -> str | None:
    name = dotted_name(call.func)
    return name.rsplit(".", 1)[-1] if name else None


class _Renamer(cst.CSTTransformer):
    def __init__(self, nodes: dict[int, str]) -> None:
        self.nodes = nodes

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.nodes.get(id(original_node))
        return updated_node.with_changes(value=new) if new is not None else updated_node

