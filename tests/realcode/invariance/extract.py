"""Extracting the step body into a function (same module, another module, a method), and its
inverse, inlining a one-call helper.

The step body is the longest run of statements of the anchor's block, ending with the probes
or with the block, that can move without changing what runs (`dataflow.range_flow`); it
becomes `outputs = train_step(params)` in place. The moved statements are the original nodes,
so the line map follows them into the new function, wherever it lives.

- `extract_function`: a module-level function of the training file, before the statement
  that holds the loop;
- `extract_module`: the same function in a new module beside the training file, which imports
  the module-level imports it reads and takes every other module-level name as a parameter;
- `extract_method`: a method of the class whose method holds the loop (called on `self`), or,
  for a loop outside a class, of a new class instantiated before the loop;
- `inline_helper`: the pair runs the other way: its original reaches the probes through a
  one-call helper function (the probes extracted), its rewrite is the probed file itself.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.inject.training_file import module_facts
from tests.realcode.invariance.dataflow import Flow, Unmovable, range_flow
from tests.realcode.invariance.probed import NotApplicable, Pair, Probed
from tests.realcode.invariance.splice import LineMap, Splice
from tests.realcode.invariance.step import target_names

BLANK = cst.EmptyLine(indent=False)


def step_range(probed: Probed, in_class: bool) -> tuple[list[cst.BaseStatement], Flow]:
    """The longest movable run of the anchor's block that holds the anchor and the probes."""
    step = probed.step
    body = list(step.block.body)
    anchor = step.index(step.anchor)
    last_probe = step.probe_span()[1]
    why = None
    rebound = frozenset(_loop_targets(step.inner_loop))
    for end in dict.fromkeys((len(body) - 1, last_probe)):
        for start in range(anchor + 1):
            try:
                return body[start:end + 1], range_flow(probed.names, step.scope, body[start:end + 1],
                                                       in_class=in_class, rebound_each_iteration=rebound)
            except Unmovable as error:
                why = why or error
    raise NotApplicable(f"no run of the step's block can move: {why}")


def _loop_targets(loop: cst.For | cst.While) -> list[str]:
    if not isinstance(loop, cst.For):
        return []
    return [n.value for n in target_names(loop.target) if isinstance(n, cst.Name)]


def _call(callee: str, flow: Flow, params: list[str]) -> cst.SimpleStatementLine:
    call = f"{callee}({', '.join(params)})"
    if not flow.outputs:
        return cst.parse_statement(call + "\n")
    return cst.parse_statement(f"{', '.join(flow.outputs)} = {call}\n")


def _function(name: str, params: list[str], statements: list[cst.BaseStatement], flow: Flow,
              leading: int) -> cst.FunctionDef:
    template = cst.parse_statement(f"def {name}({', '.join(params)}):\n    pass\n")
    body = list(statements)
    if flow.outputs:
        body.append(cst.parse_statement(f"return {', '.join(flow.outputs)}\n"))
    return template.with_changes(body=template.body.with_changes(body=body, indent=None),
                                 leading_lines=[BLANK] * leading)


def as_function_body(splice: Splice, statements: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The statements as a function body holds them: no blank line before the first, and blank
    lines left empty (not indented to the new depth). Each changed statement is pinned to its
    new self, so its lines still map."""
    moved = []
    for index, statement in enumerate(statements):
        lines = list(statement.leading_lines)
        if index == 0:
            while lines and lines[0].comment is None:
                lines.pop(0)
        lines = [line.with_changes(indent=False) if line.comment is None and line.indent else line for line in lines]
        if all(new is old for new, old in zip(lines, statement.leading_lines)) \
                and len(lines) == len(statement.leading_lines):
            moved.append(statement)
            continue
        new_statement = statement.with_changes(leading_lines=lines)
        splice.pin(statement, new_statement)
        moved.append(new_statement)
    return moved


def _replace_range(splice: Splice, statements: list[cst.BaseStatement], call: cst.SimpleStatementLine) -> None:
    splice.replace(statements[0], [call])
    for statement in statements[1:]:
        splice.remove(statement)


def _pair(probed: Probed, kind: str, splice: Splice, note: str) -> Pair:
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    return Pair(probed.label, probed.target.repo, kind, probed.files, files, line_map, probed.probe_sites(), note)


def extract_function(probed: Probed) -> Pair:
    splice, note = _extract_to_function(probed, probe_only=False)
    return _pair(probed, "extract_function", splice, note)


def _extract_to_function(probed: Probed, probe_only: bool) -> tuple[Splice, str]:
    step = probed.step
    if probe_only:
        first, last = step.probe_span()
        statements = list(step.block.body[first:last + 1])
        flow = range_flow(probed.names, step.scope, statements)
    else:
        statements, flow = step_range(probed, in_class=False)
    name = probed.names.fresh("log_step" if probe_only else "train_step")
    splice = Splice(probed.parsed)
    function = _function(name, flow.params, as_function_body(splice, statements), flow, leading=2)
    splice.insert_before(step.top, [function])
    _replace_range(splice, statements, _call(name, flow, flow.params))
    return splice, f"{len(statements)} statements -> {name}({', '.join(flow.params)}) returning {flow.outputs}"


def extract_module(probed: Probed) -> Pair:
    statements, flow = step_range(probed, in_class=False)
    imports, passed = _module_imports(probed, flow.module_reads)
    params = flow.params + [n for n in passed if n not in flow.params]
    path, dotted = probed.free_module("step_body")
    name = probed.names.fresh("train_step")
    splice = Splice(probed.parsed)
    header = cst.parse_module('"""The training step, moved out of the training script."""\n' + "".join(imports))
    function = _function(name, params, as_function_body(splice, statements), flow, leading=2)
    module = cst.Module(body=[*header.body, function], default_indent=probed.parsed.module.default_indent,
                        default_newline=probed.parsed.module.default_newline)
    splice.add_file(path, module)
    _insert_import(probed, splice, cst.parse_statement(f"from {dotted} import {name}\n"))
    _replace_range(splice, statements, _call(name, flow, params))
    return _pair(probed, "extract_module", splice,
                 f"{len(statements)} statements -> {dotted}.{name}({', '.join(params)}) returning {flow.outputs}")


def extract_method(probed: Probed) -> Pair:
    step = probed.step
    in_class = step.klass is not None and step.self_name is not None
    statements, flow = step_range(probed, in_class=in_class)
    splice = Splice(probed.parsed)
    moved = as_function_body(splice, statements)
    if in_class:
        self_name = step.self_name
        name = probed.names.fresh("train_step")
        params = [p for p in flow.params if p != self_name]
        method = _function(name, [self_name, *params], moved, flow, leading=1)
        splice.insert_after(step.klass.body.body[-1], [method])
        _replace_range(splice, statements, _call(f"{self_name}.{name}", flow, params))
        note = f"{len(statements)} statements -> {self_name}.{name}({', '.join(params)})"
    else:
        class_name = probed.names.fresh("StepRunner")
        instance = probed.names.fresh("step_runner")
        own = "self" if "self" not in flow.params else probed.names.fresh("runner")
        method = _function("run", [own, *flow.params], moved, flow, leading=0)
        template = cst.parse_statement(f"class {class_name}:\n    pass\n")
        klass = template.with_changes(body=template.body.with_changes(body=[method], indent=None),
                                      leading_lines=[BLANK, BLANK])
        splice.insert_before(step.top, [klass])
        made = cst.parse_statement(f"{instance} = {class_name}()\n")
        if step.outer_loop is step.top:  # module level: keep the blank lines after the class
            made = made.with_changes(leading_lines=[BLANK, BLANK])
        splice.insert_before(step.outer_loop, [made])
        _replace_range(splice, statements, _call(f"{instance}.run", flow, flow.params))
        note = f"{len(statements)} statements -> {class_name}().run({', '.join(flow.params)})"
    return _pair(probed, "extract_method", splice, note + f" returning {flow.outputs}")


def inline_helper(probed: Probed) -> Pair:
    """Original: the probes in a one-call helper function; rewritten: the probed file itself."""
    try:
        splice, note = _extract_to_function(probed, probe_only=True)
    except Unmovable as why:
        raise NotApplicable(f"the probes cannot move into a helper: {why}") from None
    files, forward = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    backward: LineMap = {}
    for source, target in forward.items():
        if target is not None:
            backward[target] = source
    helper_sites = {forward[site]: probe for site, probe in probed.probe_sites().items()}
    return Pair(probed.label, probed.target.repo, "inline_helper", files, probed.files, backward, helper_sites,
                "the helper " + note.split(" -> ")[1].split("(")[0] + "() inlined at its only call")


def _module_imports(probed: Probed, names: list[str]) -> tuple[list[str], list[str]]:
    """(import lines for the names only module-level imports bind, the other names)."""
    bound: dict[str, list[str]] = {}
    for statement in probed.parsed.module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound.setdefault(_bound_name(alias), []).append(_import_line(small, alias))
    scope = probed.names.parsed_global_scope()
    imports, passed = [], []
    for name in names:
        lines = bound.get(name, [])
        assignments = list(scope.assignments[name]) if name in scope.assignments else []
        if lines and len(lines) == len(assignments):
            # `import torch` and `import torch.nn.parallel` both bind `torch`: copy them all.
            imports += lines
        elif name in scope.assignments:
            passed.append(name)
        else:
            raise NotApplicable(f"`{name}` is read from the module but bound nowhere in it")
    return sorted(set(imports)), passed


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None:
        return alias.asname.name.value
    node = alias.name
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value


def _import_line(statement: cst.Import | cst.ImportFrom, alias: cst.ImportAlias) -> str:
    text = cst.Module(body=[]).code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    if isinstance(statement, cst.Import):
        return f"import {text}\n"
    module = cst.Module(body=[]).code_for_node(statement.module) if statement.module is not None else ""
    dots = "." * len(statement.relative)
    return f"from {dots}{module} import {text}\n"


def _insert_import(probed: Probed, splice: Splice, statement: cst.SimpleStatementLine) -> None:
    """After the docstring and `from __future__` imports, as the injection harness does."""
    header_line = module_facts(probed.text).header_line
    body = probed.parsed.module.body
    for node in body:
        if probed.parsed.lines(node)[1] == header_line:
            splice.insert_after(node, [statement])
            return
    splice.insert_before(body[0], [statement])
