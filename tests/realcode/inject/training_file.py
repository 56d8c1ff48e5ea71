"""What the harness must know about a training file to write valid code into it.

Injected code uses the file's own names for modules (`import torch as th` gives `th`), adds
the imports it lacks under aliases no repository uses (`import numpy as probe_np`), and puts
them after the module docstring and `from __future__` imports, where Python requires the
latter to stay first.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tests.realcode.inject.probes import Aliases

# Modules injected code may need, and the alias used when the file does not import them.
FALLBACK_ALIASES = {
    "torch": "torch",
    "numpy": "probe_np",
    "subprocess": "probe_subprocess",
    "functools": "probe_functools",
}


@dataclass(frozen=True)
class ModuleFacts:
    """`header_line`: the line after which imports may be added; `bound`: module -> the name a
    top-level `import module [as name]` binds it to."""

    header_line: int
    bound: dict[str, str]


def module_facts(source: str) -> ModuleFacts:
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    header_line = 0
    bound: dict[str, str] = {}
    for index, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if _is_docstring(small, index) or _is_future_import(small):
                header_line = positions[statement].end.line
            if isinstance(small, cst.Import):
                for alias in small.names:
                    _bind(bound, alias)
    if header_line == 0:
        # Keep a shebang, an encoding line or a licence comment on top.
        for text in source.splitlines():
            if not text.startswith("#"):
                break
            header_line += 1
    return ModuleFacts(header_line, bound)


def _is_docstring(small: cst.BaseSmallStatement, index: int) -> bool:
    return index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))


def _is_future_import(small: cst.BaseSmallStatement) -> bool:
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"


def _bind(bound: dict[str, str], alias: cst.ImportAlias) -> None:
    dotted = cst.helpers.get_full_name_for_node(alias.name)
    if dotted is None:
        return
    if alias.asname is not None:
        if isinstance(alias.asname.name, cst.Name):
            bound.setdefault(dotted, alias.asname.name.value)
    else:
        # `import torch.nn` binds `torch` as well.
        top = dotted.split(".")[0]
        bound.setdefault(top, top)


def aliases_and_imports(facts: ModuleFacts, modules: set[str]) -> tuple[Aliases, list[str]]:
    """The names injected code uses for `modules`, and the import lines to add for the missing."""
    names: dict[str, str] = {}
    imports: list[str] = []
    for module in sorted(modules):
        if module in facts.bound:
            names[module] = facts.bound[module]
        else:
            alias = FALLBACK_ALIASES[module]
            names[module] = alias
            imports.append(f"import {module}" if alias == module else f"import {module} as {alias}")
    aliases = Aliases(
        torch=names.get("torch", "torch"),
        numpy=names.get("numpy", "np"),
        subprocess=names.get("subprocess", "subprocess"),
        functools=names.get("functools", "functools"),
    )
    return aliases, imports


def package_of(root: str, relative_path: str) -> str | None:
    """`pkg.sub` for a file inside packages (folders with `__init__.py`) under `root`, else None."""
    parts: list[str] = []
    folder = os.path.dirname(relative_path)
    while folder and os.path.isfile(os.path.join(root, folder, "__init__.py")):
        parts.append(os.path.basename(folder))
        folder = os.path.dirname(folder)
    return ".".join(reversed(parts)) or None
