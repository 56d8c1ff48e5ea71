"""Copies of a repository at its pinned commit, one per path kind, with the probes written in.

The export is score_realcode's (`git ls-tree` and `git archive` of the *.py files from the bare
mirror), done once per repository; each path kind works on its own copy of that export so the
probes of one kind never meet another kind's.
"""

from __future__ import annotations

import os
import shutil

import libcst as cst

from tests.realcode.inject.finder import InsertionPoint, find_training_loops, insertion_point_at
from tests.realcode.inject.path_kinds import Injection, Site
from tests.realcode.inject.probes import PROBES
from tests.realcode.inject.targets import Target
from tests.realcode.inject.training_file import package_of
from tests.realcode.score_realcode import export_py, find_git_dir

HELPER_STEM = "probe_helpers"


def export_repository(mirrors: str, mirror: str, commit: str, dest: str) -> int:
    """Every *.py file of the repository at `commit` under `dest`; returns the count."""
    return export_py(find_git_dir(mirrors, mirror), commit, ["."], dest)


def insertion_point(target: Target, source: str) -> InsertionPoint:
    """The table's line when it names one, else the finder's only training loop in the file."""
    if target.line is not None:
        return insertion_point_at(source, target.line, target.path, target.subject)
    points = [p for p in find_training_loops(source, target.path) if p.subject is not None]
    if len(points) != 1:
        lines = ", ".join(str(p.statement_line) for p in points) or "none"
        raise LookupError(f"{target.label}: {len(points)} training loops with a named loss (lines {lines}); "
                          f"name the line in targets.py")
    return points[0]


def site_for(target: Target, repo_root: str) -> Site:
    """The training loop of `target` in an exported repository, with a free helper-module name."""
    with open(os.path.join(repo_root, target.path), encoding="utf-8") as handle:
        source = handle.read()
    folder = os.path.dirname(target.path)
    stem = HELPER_STEM
    while os.path.exists(os.path.join(repo_root, folder, stem + ".py")):
        stem += "_"
    package = package_of(repo_root, target.path)
    return Site(
        path=target.path,
        source=source,
        point=insertion_point(target, source),
        probes=PROBES,
        helper_path=os.path.join(folder, stem + ".py") if folder else stem + ".py",
        helper_module=f"{package}.{stem}" if package else stem,
    )


def write_copy(pristine: str, dest: str, injection: Injection) -> None:
    """A copy of the pristine export with the injection's files written over it.

    Every written file must parse (with libcst, as verify-perf does): a probe that broke the file
    would be scored as a miss of verify-perf when it is the harness's fault.
    """
    shutil.copytree(pristine, dest)
    for path, text in injection.files.items():
        cst.parse_module(text)
        with open(os.path.join(dest, path), "w", encoding="utf-8") as handle:
            handle.write(text)
