"""The shapes a loss comes out of a model in, rewritten into one another where the repository's
code allows it without changing what runs:

- `named_output`: `logits, loss = model(x, y)` -> `out = model(x, y)` / `logits, loss = out`
  (any loss statement: the call's result goes through a name first);
- `indexed_output`: `logits, loss = model(x, y)` -> `out = model(x, y)` / `logits = out[0]` /
  `loss = out[1]` (a tuple target of plain names);
- `keyed_output`: `loss = out.loss` -> `loss = out["loss"]` (a Hugging Face model output,
  which answers both);
- `dict_packed`: `loss = f(x)` -> `out = {"loss": f(x)}` / `loss = out["loss"]` (a single name).

The statement rewritten is the one that makes the loss (`step.loss_statement`); its lines map
to the new statement that holds the call.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.inject.finder import dotted_name
from tests.realcode.invariance.probed import NotApplicable, Pair, Probed
from tests.realcode.invariance.splice import Splice
from tests.realcode.invariance.step import loss_statement, target_names


def _statement_and_assign(probed: Probed) -> tuple[cst.SimpleStatementLine, cst.Assign]:
    statement = loss_statement(probed.step)
    if statement is None:
        raise NotApplicable(f"no assignment makes `{probed.subject}` in the loop")
    return statement, statement.body[0]


def _line(assign: cst.Assign, template: cst.SimpleStatementLine, first: bool) -> cst.SimpleStatementLine:
    """`assign` as a statement line; the first keeps the original's comments around it."""
    if first:
        return template.with_changes(body=[assign])
    return cst.SimpleStatementLine(body=[assign])


def _assign(target: cst.BaseAssignTargetExpression, value: cst.BaseExpression) -> cst.Assign:
    return cst.Assign(targets=[cst.AssignTarget(target=target)], value=value)


def _finish(probed: Probed, kind: str, splice: Splice, note: str) -> Pair:
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, kind, probed.files, files, line_map, probed.probe_sites(), note)


def named_output(probed: Probed) -> Pair:
    statement, assign = _statement_and_assign(probed)
    out = probed.names.fresh("out")
    first = _line(_assign(cst.Name(out), assign.value), statement, first=True)
    second = _line(assign.with_changes(value=cst.Name(out)), statement, first=False)
    splice = Splice(probed.parsed)
    splice.replace(statement, [first, second])
    splice.pin(statement, first)
    return _finish(probed, "loss_named_output", splice, f"the loss statement's value goes through `{out}`")


def indexed_output(probed: Probed) -> Pair:
    statement, assign = _statement_and_assign(probed)
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(assign.value, cst.Call):
        raise NotApplicable("the loss is not unpacked from a call's tuple")
    elements = [e for e in target.elements]
    if any(isinstance(e, cst.StarredElement) or isinstance(e.value, (cst.Tuple, cst.List)) for e in elements):
        raise NotApplicable("the unpacking has a starred or nested target")
    out = probed.names.fresh("out")
    first = _line(_assign(cst.Name(out), assign.value), statement, first=True)
    rest = [
        _line(_assign(e.value, cst.Subscript(value=cst.Name(out), slice=[
            cst.SubscriptElement(slice=cst.Index(value=cst.Integer(str(i))))])), statement, first=False)
        for i, e in enumerate(elements)
    ]
    splice = Splice(probed.parsed)
    splice.replace(statement, [first, *rest])
    splice.pin(statement, first)
    return _finish(probed, "loss_indexed_output", splice, f"`{out} = call` then one index per unpacked name")


def keyed_output(probed: Probed) -> Pair:
    statement, assign = _statement_and_assign(probed)
    value = assign.value
    if not (isinstance(value, cst.Attribute) and value.attr.value == "loss" and dotted_name(value.value)):
        raise NotApplicable("the loss is not read as `.loss` of a model output")
    keyed = cst.Subscript(value=value.value, slice=[
        cst.SubscriptElement(slice=cst.Index(value=cst.SimpleString('"loss"')))])
    new = statement.with_changes(body=[assign.with_changes(value=keyed)])
    splice = Splice(probed.parsed)
    splice.replace(statement, [new])
    splice.pin(statement, new)
    return _finish(probed, "loss_keyed_output", splice, '`.loss` read as `["loss"]`')


def dict_packed(probed: Probed) -> Pair:
    statement, assign = _statement_and_assign(probed)
    bound = target_names(assign.targets[0].target)
    if len(bound) != 1 or not isinstance(bound[0], cst.Name):
        raise NotApplicable("the loss statement does not bind one plain name")
    out = probed.names.fresh("out")
    packed = cst.Dict(elements=[cst.DictElement(key=cst.SimpleString('"loss"'), value=assign.value)])
    first = _line(_assign(cst.Name(out), packed), statement, first=True)
    unpack = cst.Subscript(value=cst.Name(out), slice=[
        cst.SubscriptElement(slice=cst.Index(value=cst.SimpleString('"loss"')))])
    second = _line(assign.with_changes(value=unpack), statement, first=False)
    splice = Splice(probed.parsed)
    splice.replace(statement, [first, second])
    splice.pin(statement, first)
    return _finish(probed, "loss_dict_packed", splice, f'`{out} = {{"loss": value}}` then `{out}["loss"]`')
