"""Copies of a repository at its pinned commit, one per path kind, with the probes written in.

The export is score_realcode's (`git ls-tree` and `git archive` of the *.py files from the bare
mirror), done once per repository; each path kind works on its own copy of that export so the
probes of one kind never meet another kind's. `analyse_copy` is the one way both harnesses
(injection and invariance) run verify-perf on such a copy.
"""

from __future__ import annotations

import os
import shutil

import libcst as cst

from tests.realcode.inject.finder import InsertionPoint, find_training_loops, insertion_point_at
from tests.realcode.inject.path_kinds import Site
from tests.realcode.inject.probes import PROBES
from tests.realcode.inject.targets import Target
from tests.realcode.inject.training_file import package_of
from tests.realcode.score_realcode import export_py, find_git_dir, in_scope, norm_path, run_verifier, scope_list

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


def write_copy(pristine: str, dest: str, files: dict[str, str]) -> None:
    """A copy of the pristine export with `files` (repository-relative path -> text) written over it.

    Every written file must parse (with libcst, as verify-perf does): a probe that broke the file
    would be scored as a miss of verify-perf when it is the harness's fault.
    """
    shutil.copytree(pristine, dest)
    for path, text in files.items():
        cst.parse_module(text)
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)


def analyse_copy(pristine: str, root: str, mirror: str, files: dict[str, str], scope: tuple[str, ...],
                 verifier_cmd: str, timeout: float) -> list[dict]:
    """verify-perf's findings on a copy of `pristine` (at `root/mirror`) with `files` written over it.

    The analysed paths are `scope` (the whole copy for ".") plus every written file outside it;
    finding paths come back relative to the repository. A written file that verify-perf could
    not analyse (VP900) is an error of the harness, not a finding.
    """
    copy = os.path.join(root, mirror)
    write_copy(pristine, copy, files)
    scopes = scope_list(list(scope))
    scopes += [path for path in files if not in_scope(path, scopes)]
    data, _ = run_verifier(verifier_cmd, root, mirror, scopes, timeout)
    findings = []
    for finding in data.get("findings", []):
        finding = dict(finding)
        finding["path"] = norm_path(finding["path"], root, mirror)
        findings.append(finding)
    broken = [f for f in findings if f["code"] == "VP900" and f["path"] in files]
    if broken:
        raise RuntimeError(f"verify-perf could not analyse {broken[0]['path']}: {broken[0].get('message')}")
    return findings
