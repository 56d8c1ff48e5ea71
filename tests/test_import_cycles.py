"""No import circles in the package: the data flows one way (CLI → check → analysis → report).

The graph is read from the source with `ast`, never by importing: every `import`, every
`from ... import` (relative ones resolved), imports inside functions and under `TYPE_CHECKING`,
and `importlib.import_module("literal")` all count, because a lazy import that goes back up
the layers is still a circle in the design.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_dirs(root: Path) -> dict[str, Path]:
    """The installed package names and the folders they come from, as pyproject.toml maps them."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {name: root / folder for name, folder in setuptools["package-dir"].items()}


def module_files(packages: dict[str, Path]) -> dict[str, Path]:
    """Every module's dotted name and file; a sub-package mapped elsewhere is not walked twice."""
    modules: dict[str, Path] = {}
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("").parts
            if relative[-1] == "__init__":
                relative = relative[:-1]
            name = ".".join((package, *relative))
            owner = max((p for p in packages if name == p or name.startswith(p + ".")), key=len)
            if owner == package:
                modules[name] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """Dotted names this module imports, including `from x import y` read as both `x` and `x.y`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def import_graph(packages: dict[str, Path]) -> dict[str, set[str]]:
    modules = module_files(packages)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_names(name, path):
            # `import a.b.c` also runs a and a.b: the closest module that exists is the edge.
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules, as one circle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative so that a deep package cannot hit the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return [_circle(graph, group) for group in sorted(groups)]


def _circle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, for a readable message."""
    members = set(group)
    start = group[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    following.append(child)
        frontier = following
    return group


def test_the_package_has_no_import_cycle():
    graph = import_graph(package_dirs(ROOT))
    assert "verifier.cli" in graph and "verifier.rules" in graph and "verifier.reference_impl" in graph
    found = [" -> ".join(circle) for circle in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_the_command_line_is_imported_by_nothing_but_the_entry_points():
    graph = import_graph(package_dirs(ROOT))
    importers = sorted(name for name, targets in graph.items() if "verifier.cli" in targets)
    assert importers == ["verifier.__main__", "verifier.startup"]


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        path = tmp_path / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {"pkg": tmp_path / "pkg"}


def test_a_lazy_circle_through_three_modules_is_found(tmp_path):
    packages = _package(tmp_path, {
        "__init__.py": "",
        "cli.py": "def main():\n    from pkg.check import run\n",
        "check.py": "from pkg.report import render\n",
        "report.py": "import importlib\nimportlib.import_module('pkg.cli')\n",
        "leaf.py": "import os\n",
    })
    assert cycles(import_graph(packages)) == [["pkg.check", "pkg.report", "pkg.cli", "pkg.check"]]


def test_type_checking_and_relative_imports_count(tmp_path):
    packages = _package(tmp_path, {
        "__init__.py": "",
        "static/__init__.py": "",
        "static/context.py": "from .rule import Candidate\n",
        "static/rule.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.static.context import Context\n"
        ),
    })
    assert cycles(import_graph(packages)) == [["pkg.static.context", "pkg.static.rule", "pkg.static.context"]]


def test_a_package_importing_its_own_submodules_is_not_a_circle(tmp_path):
    packages = _package(tmp_path, {
        "__init__.py": "from pkg import helpers\n",
        "helpers.py": "import pkg.leaf\n",
        "leaf.py": "",
    })
    graph = import_graph(packages)
    assert graph == {"pkg": {"pkg.helpers"}, "pkg.helpers": {"pkg.leaf"}, "pkg.leaf": set()}
    assert cycles(graph) == []
