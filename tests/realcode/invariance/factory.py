"""Building the model through a factory function: `model = GPT(config)` becomes
`model = make_model(config)` with `def make_model(*args, **kwargs): return GPT(*args, **kwargs)`
defined right before it, in the same block (so it exists when the construction runs).

The model is the same object either way, moved and wrapped as before, so every finding, those in
its `forward` included, must stay. Only the first construction of the model's name is rewritten;
its lines map onto the new assignment, and the lines after it move down by the factory's.
"""

from __future__ import annotations

import libcst as cst

from tests.realcode.invariance.probed import NotApplicable, Pair, Probed
from tests.realcode.invariance.renames import model_name
from tests.realcode.invariance.splice import Splice


def model_factory(probed: Probed) -> Pair:
    model = model_name(probed)
    if model is None:
        raise NotApplicable("no local name of a module is called to make the loss")
    statement, call = _construction(probed, model)
    factory = probed.names.fresh("make_model")
    class_name = cst.Module(body=()).code_for_node(call.func)
    definition = cst.parse_statement(f"def {factory}(*args, **kwargs):\n    return {class_name}(*args, **kwargs)\n")
    rewritten = statement.deep_replace(call, call.with_changes(func=cst.Name(factory)))
    splice = Splice(probed.parsed)
    splice.replace(statement, [definition, rewritten])
    splice.pin(statement, rewritten)
    files, line_map = splice.render()
    for path, text in files.items():
        compile(text, path, "exec")
    note = f"`{model} = {class_name}(...)` built through {factory}()"
    return Pair(probed.label, probed.target.repo, "model_factory", probed.files, files, line_map, probed.probe_sites(), note)


def _construction(probed: Probed, model: str) -> tuple[cst.SimpleStatementLine, cst.Call]:
    """The first `model = Cls(...)` of the file, also moved in the same statement
    (`model = Cls(...).to(device)`): a CapWords callee, a class constructed."""
    for node in probed.parsed.nodes:
        if type(node) is not cst.SimpleStatementLine or len(node.body) != 1 or type(node.body[0]) is not cst.Assign:
            continue
        assign = node.body[0]
        targets = [t.target for t in assign.targets]
        if len(targets) != 1 or type(targets[0]) is not cst.Name or targets[0].value != model:
            continue
        value = assign.value
        # Down a chain of method calls (`Cls(...).to(device).train()`) to the construction.
        while type(value) is cst.Call and type(value.func) is cst.Attribute and type(value.func.value) is cst.Call:
            value = value.func.value
        if type(value) is not cst.Call or type(value.func) not in (cst.Name, cst.Attribute):
            continue
        last = value.func.value if type(value.func) is cst.Name else value.func.attr.value
        if last[:1].isupper():
            return node, value
    raise NotApplicable(f"`{model}` is not built by constructing a class (`{model} = Cls(...)`)")
