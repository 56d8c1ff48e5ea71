"""The original of every pair: a real training file with known per-step probes written in.

The probes are the injection harness's, written inline right after an anchor (the backward, or
the optimizer step after it) by its `inline` path kind, so there is something every rewrite
must keep (or, for the behaviour-changing ones, change). A `Pair` is what the runner measures:
two sets of files over the same pristine export and the line map between them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tests.realcode.inject.finder import InsertionPoint, optimizer_step_after
from tests.realcode.inject.path_kinds import Site, inject
from tests.realcode.inject.probes import PROBES_BY_NAME, Probe
from tests.realcode.inject.targets import Target
from tests.realcode.inject.training_file import package_of
from tests.realcode.inject.workspace import insertion_point
from tests.realcode.invariance.dataflow import Names
from tests.realcode.invariance.splice import LineMap, Parsed
from tests.realcode.invariance.step import Step, locate

# A read the value model must prove (`float`), a method read, a graph kept alive, a stream sync.
PROBE_NAMES = ("item", "float", "history_append", "cuda_synchronize")
PROBES: tuple[Probe, ...] = tuple(PROBES_BY_NAME[name] for name in PROBE_NAMES)
ANCHORS = ("backward", "step")


class NotApplicable(Exception):
    """The rewrite has no form for this step (no module-level loop to wrap, a dotted loss ...)."""


@dataclass
class Probed:
    """One training loop of one repository, probed after one anchor."""

    target: Target
    anchor: str
    repo_root: str            # the pristine export, read to pick free module names
    path: str
    text: str
    probe_lines: dict[int, str]   # line -> probe name, in `text`
    subject: str
    parsed: Parsed = field(init=False)
    names: Names = field(init=False)
    step: Step = field(init=False)

    def __post_init__(self) -> None:
        self.parsed = Parsed(self.path, self.text)
        self.names = Names.of(self.parsed)
        self.step = locate(self.parsed, sorted(self.probe_lines), self.subject)

    @property
    def label(self) -> str:
        return f"{self.target.label}@{self.anchor}"

    @property
    def files(self) -> dict[str, str]:
        return {self.path: self.text}

    def probe_sites(self) -> dict[tuple[str, int], str]:
        return {(self.path, line): probe for line, probe in self.probe_lines.items()}

    def free_module(self, stem: str) -> tuple[str, str]:
        """(repository path, dotted module name) of a new module beside the training file."""
        folder = os.path.dirname(self.path)
        while os.path.exists(os.path.join(self.repo_root, folder, stem + ".py")):
            stem += "_"
        package = package_of(self.repo_root, self.path)
        path = os.path.join(folder, stem + ".py") if folder else stem + ".py"
        return path, f"{package}.{stem}" if package else stem


@dataclass(frozen=True)
class Pair:
    """Two variants of the same files and where the lines of the first went in the second."""

    label: str                          # the probed loop and anchor
    repo: str
    kind: str
    original: dict[str, str]
    rewritten: dict[str, str]
    line_map: LineMap
    probe_sites: dict[tuple[str, int], str]   # in the original: (path, line) -> probe name
    note: str


def anchor_point(target: Target, source: str, anchor: str) -> InsertionPoint:
    backward = insertion_point(target, source)
    if anchor == "backward":
        return backward
    step = optimizer_step_after(source, backward)
    if step is None:
        raise NotApplicable("no optimizer step statement after the backward in this loop")
    return step


def probe(target: Target, repo_root: str, anchor: str) -> Probed:
    """The target's training file with the probes written inline after the anchor."""
    with open(os.path.join(repo_root, target.path), encoding="utf-8") as handle:
        source = handle.read()
    point = anchor_point(target, source, anchor)
    site = Site(target.path, source, point, PROBES, helper_path="", helper_module="")
    injection = inject("inline", site)
    lines = {s.line: s.probe for s in injection.sites}
    return Probed(target, anchor, repo_root, target.path, injection.files[target.path], lines, point.subject)
