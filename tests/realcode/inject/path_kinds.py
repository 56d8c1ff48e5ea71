"""Path kinds: the ways a training step reaches a probe, each one generator of edited code.

Every generator takes one training loop (a `Site`) and all the probes, and writes each probe
into its own helper (function, method, lambda, context manager ...) reached from the step the
way its kind says, so that one copy of a repository and one verify-perf run cover one path
kind. A generator returns None when its kind does not apply to the loop (a method of `self`
needs a loop inside a method). The manifest (`ProbeSite`) records where each probe's costly
line is and the line in the loop that reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tests.realcode.inject.edits import FileEdit, Line, indented
from tests.realcode.inject.finder import InsertionPoint
from tests.realcode.inject.probes import API_ALIASES, Aliases, Probe
from tests.realcode.inject.training_file import aliases_and_imports, module_facts

HELPER_ALIASES = Aliases()
HELPER_IMPORTS = ("import subprocess", "", "import numpy as np", "import torch")
PARAMETER = "loss"  # how helpers name the loss they are handed, as training code usually does


@dataclass(frozen=True)
class Site:
    """One training loop of one file, and where a new helper module would go."""

    path: str
    source: str
    point: InsertionPoint
    probes: tuple[Probe, ...]
    helper_path: str
    helper_module: str

    @property
    def subject(self) -> str:
        return self.point.subject


@dataclass(frozen=True)
class ProbeSite:
    """Where one probe's costly line is, and the line of the loop through which it runs."""

    probe: str
    path: str
    line: int
    call_path: str
    call_line: int


@dataclass(frozen=True)
class Injection:
    kind: str
    files: dict[str, str]
    sites: tuple[ProbeSite, ...]


def _body(probe: Probe, subject: str, names: Aliases, prefix: str = "    ") -> list[Line]:
    """The probe's statements as a block, its costly line tagged."""
    return [
        Line(prefix + text, (probe.name,) if i == probe.probe_index else (), "probe" if i == probe.probe_index else None)
        for i, text in enumerate(probe.statements(subject, names))
    ]


def _function(name: str, params: str, body: list[Line], decorators: tuple[str, ...] = ()) -> list[Line]:
    return [Line(d) for d in decorators] + [Line(f"def {name}({params}):")] + body


def _class(header: str, members: list[list[Line]], doc: str) -> list[Line]:
    lines = [Line(header), Line(f'    """{doc}"""')]
    for member in members:
        lines += [Line("")] + indented(member, "    ")
    return lines


def _spaced(blocks: list[list[Line]]) -> list[Line]:
    """Module-level definitions separated and surrounded by two blank lines."""
    lines: list[Line] = [Line(""), Line("")]
    for block in blocks:
        lines += block + [Line(""), Line("")]
    return lines


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


@dataclass
class _Builder:
    """Collects the pieces one path kind adds to the training file and the helper module."""

    site: Site
    names: Aliases = field(init=False)
    _required: set[str] = field(default_factory=set)
    _extra_imports: list[str] = field(default_factory=list)
    _preamble: list[list[Line]] = field(default_factory=list)
    _setup: list[Line] = field(default_factory=list)
    _step: list[Line] = field(default_factory=list)
    _class_tail: list[list[Line]] = field(default_factory=list)
    _init_tail: list[Line] = field(default_factory=list)
    _helper: list[list[Line]] = field(default_factory=list)
    _helper_history: bool = False
    _training_history: bool = False
    _wrap_tail: bool = False

    def __post_init__(self) -> None:
        self._facts = module_facts(self.site.source)
        self.names, _ = aliases_and_imports(self._facts, {"torch", "numpy", "subprocess", "functools"})

    @property
    def point(self) -> InsertionPoint:
        return self.site.point

    def probes_in_training_file(self, probes: tuple[Probe, ...]) -> None:
        """Imports and the module-level history list for probe code written into the training file."""
        self._required.add("torch")
        for probe in probes:
            self._required |= probe.needs - {"history"}
            self._training_history = self._training_history or "history" in probe.needs

    def probes_in_helper_module(self, probes: tuple[Probe, ...]) -> None:
        self._helper_history = self._helper_history or any("history" in p.needs for p in probes)

    def require(self, module: str) -> None:
        self._required.add(module)

    def import_from_helper(self, names: list[str]) -> None:
        self._extra_imports.append(f"from {self.site.helper_module} import {', '.join(names)}")

    def preamble(self, block: list[Line]) -> None:
        self._preamble.append(block)

    def setup(self, lines: list[Line]) -> None:
        self._setup += lines

    def step(self, lines: list[Line]) -> None:
        self._step += lines

    def method(self, block: list[Line]) -> None:
        self._class_tail.append(block)

    def in_init(self, lines: list[Line]) -> None:
        self._init_tail += lines

    def helper(self, block: list[Line]) -> None:
        self._helper.append(block)

    def wrap_tail(self) -> None:
        """Put the rest of the step's block (after the probes' anchor) under the `with` just added."""
        self._wrap_tail = True

    def render(self, kind: str) -> Injection:
        point, site = self.point, self.site
        _, missing = aliases_and_imports(self._facts, self._required)
        edit = FileEdit(site.source)
        # Blocks anchored to the same line keep this order: the step's lines before a class
        # tail that closes the class after them, module-level code before set-up code.
        header = missing + self._extra_imports
        if header:
            edit.insert_after(self._facts.header_line, [Line(text) for text in header])
        preamble = ([[Line(f"{self.names.history} = []")]] if self._training_history else []) + self._preamble
        if preamble:
            edit.insert_before(point.top_level_line, _spaced(preamble)[2:])
        if self._setup:
            edit.insert_before(point.outer_loop_line, indented(self._setup, point.outer_loop_indent))
        edit.insert_after(point.statement_end_line, indented(self._step, point.indent))
        if self._wrap_tail:
            if point.block_end_line > point.statement_end_line:
                edit.indent_range(point.statement_end_line + 1, point.block_end_line, point.indent_unit)
            else:
                edit.insert_after(point.statement_end_line, [Line(point.indent + point.indent_unit + "pass")])
        if self._init_tail:
            edit.insert_after(point.init_end_line, indented(self._init_tail, point.init_body_indent))
        if self._class_tail:
            members: list[Line] = []
            for block in self._class_tail:
                members += [Line("")] + block
            edit.insert_after(point.class_end_line, indented(members, point.class_body_indent))
        text, tags = edit.render()
        files = {site.path: text}
        helper_tags: dict[tuple[str, str], int] = {}
        if self._helper:
            helper_text, helper_tags = _render_helper_module(self._helper, self._helper_history)
            files[site.helper_path] = helper_text
        sites = []
        for probe in site.probes:
            call_line = tags.get((probe.name, "call")) or tags[(probe.name, "probe")]
            if (probe.name, "probe") in tags:
                sites.append(ProbeSite(probe.name, site.path, tags[(probe.name, "probe")], site.path, call_line))
            else:
                sites.append(ProbeSite(probe.name, site.helper_path, helper_tags[(probe.name, "probe")], site.path, call_line))
        return Injection(kind, files, tuple(sites))


def _render_helper_module(blocks: list[list[Line]], history: bool) -> tuple[str, dict[tuple[str, str], int]]:
    lines = [Line('"""Helpers called from the training step (injected to measure verify-perf)."""'), Line("")]
    lines += [Line(text) for text in HELPER_IMPORTS]
    if history:
        lines += [Line(""), Line(f"{HELPER_ALIASES.history} = []")]
    lines += _spaced(blocks)[:-1]
    edit = FileEdit("")
    edit.insert_after(0, lines)
    return edit.render()


# ------------------------------------------------------------------ the path kinds


def inline(b: _Builder) -> None:
    """The probe written in the loop body itself."""
    probes = b.site.probes
    b.probes_in_training_file(probes)
    for probe in probes:
        b.step(_body(probe, b.site.subject, b.names, prefix=""))


def helper_module(b: _Builder) -> None:
    """A function in a new module of the repository, imported by the training file."""
    probes = b.site.probes
    b.probes_in_helper_module(probes)
    for probe in probes:
        b.helper(_function(f"probe_{probe.name}", PARAMETER, _body(probe, PARAMETER, HELPER_ALIASES)))
        b.step([Line(f"probe_{probe.name}({b.site.subject})", (probe.name,), "call")])
    b.import_from_helper([f"probe_{p.name}" for p in probes])


def self_method(b: _Builder) -> bool:
    """A method of the class whose method holds the loop, called on `self`."""
    point = b.point
    if not point.function_is_method or not point.self_name:
        return False
    probes = b.site.probes
    b.probes_in_training_file(probes)
    for probe in probes:
        b.method(_function(f"probe_{probe.name}", f"self, {PARAMETER}", _body(probe, PARAMETER, b.names)))
        b.step([Line(f"{point.self_name}.probe_{probe.name}({b.site.subject})", (probe.name,), "call")])
    return True


def _probe_methods(b: _Builder, names: Aliases) -> list[list[Line]]:
    return [_function(f"probe_{p.name}", f"self, {PARAMETER}", _body(p, PARAMETER, names)) for p in b.site.probes]


def _runner_class(b: _Builder) -> None:
    b.probes_in_training_file(b.site.probes)
    b.preamble(_class("class ProbeRunner:", _probe_methods(b, b.names), "Per-step helpers the training loop calls."))


def local_instance(b: _Builder) -> None:
    """A method of an instance made in the loop's function, before the loop."""
    _runner_class(b)
    b.setup([Line("probe_runner = ProbeRunner()")])
    for probe in b.site.probes:
        b.step([Line(f"probe_runner.probe_{probe.name}({b.site.subject})", (probe.name,), "call")])


def instance_at_call(b: _Builder) -> None:
    """A method of an instance made right at the call (`ProbeRunner().probe_item(loss)`)."""
    _runner_class(b)
    for probe in b.site.probes:
        b.step([Line(f"ProbeRunner().probe_{probe.name}({b.site.subject})", (probe.name,), "call")])


def init_attribute(b: _Builder) -> bool:
    """A method of an instance stored on `self` in `__init__` of the loop's class."""
    point = b.point
    if not point.function_is_method or point.init_end_line is None or not point.self_name:
        return False
    _runner_class(b)
    b.in_init([Line("self.probe_runner = ProbeRunner()")])
    for probe in b.site.probes:
        b.step([Line(f"{point.self_name}.probe_runner.probe_{probe.name}({b.site.subject})", (probe.name,), "call")])
    return True


def inherited_method(b: _Builder) -> None:
    """A method inherited from a base class defined in another module."""
    probes = b.site.probes
    b.probes_in_helper_module(probes)
    b.helper(_class("class ProbeBase:", _probe_methods(b, HELPER_ALIASES), "Per-step helpers, inherited."))
    b.import_from_helper(["ProbeBase"])
    b.preamble(_class("class ProbeRunner(ProbeBase):", [], "Takes every probe from its base class."))
    b.setup([Line("probe_runner = ProbeRunner()")])
    for probe in probes:
        b.step([Line(f"probe_runner.probe_{probe.name}({b.site.subject})", (probe.name,), "call")])


def model_parameter(b: _Builder) -> None:
    """A model's method, called by a function that receives the model as a parameter."""
    probes = b.site.probes
    b.probes_in_training_file(probes)
    b.preamble(_class(f"class ProbeModel({b.names.torch}.nn.Module):", _probe_methods(b, b.names),
                      "A module whose methods run every step."))
    for probe in probes:
        b.preamble(_function(f"run_probe_{probe.name}", f"model, {PARAMETER}",
                             [Line(f"    model.probe_{probe.name}({PARAMETER})")]))
        b.step([Line(f"run_probe_{probe.name}(probe_model, {b.site.subject})", (probe.name,), "call")])
    b.setup([Line("probe_model = ProbeModel()")])


def _probe_functions(b: _Builder, params: str = PARAMETER, decorators: tuple[str, ...] = ()) -> None:
    b.probes_in_training_file(b.site.probes)
    for probe in b.site.probes:
        b.preamble(_function(f"probe_{probe.name}", params, _body(probe, PARAMETER, b.names), decorators))


def callback_argument(b: _Builder) -> None:
    """A function passed as an argument to a function that calls it."""
    _probe_functions(b)
    b.preamble(_function("invoke_probe", f"callback, {PARAMETER}", [Line(f"    callback({PARAMETER})")]))
    for probe in b.site.probes:
        b.step([Line(f"invoke_probe(probe_{probe.name}, {b.site.subject})", (probe.name,), "call")])


def callback_list(b: _Builder) -> None:
    """Functions stored in a list before the loop and called in a loop over the list."""
    _probe_functions(b)
    unit = b.point.indent_unit
    for probe in b.site.probes:
        b.setup([Line(f"probe_{probe.name}_callbacks = [probe_{probe.name}]")])
        b.step([
            Line(f"for probe_callback in probe_{probe.name}_callbacks:"),
            Line(f"{unit}probe_callback({b.site.subject})", (probe.name,), "call"),
        ])


def functools_partial(b: _Builder) -> None:
    """A `functools.partial` of a function, bound before the loop."""
    b.require("functools")
    _probe_functions(b, params=f"tag, {PARAMETER}")
    for probe in b.site.probes:
        b.setup([Line(f'probe_{probe.name}_partial = {b.names.functools}.partial(probe_{probe.name}, "{probe.name}")')])
        b.step([Line(f"probe_{probe.name}_partial({b.site.subject})", (probe.name,), "call")])


def lambda_(b: _Builder) -> None:
    """A lambda bound before the loop; the probe is its body where it is an expression."""
    probes = b.site.probes
    b.probes_in_training_file(probes)
    for probe in probes:
        if probe.expression is not None:
            body = probe.expression(PARAMETER, b.names)
            b.setup([Line(f"probe_{probe.name}_lambda = lambda {PARAMETER}: {body}", (probe.name,), "probe")])
        else:
            b.preamble(_function(f"probe_{probe.name}", PARAMETER, _body(probe, PARAMETER, b.names)))
            b.setup([Line(f"probe_{probe.name}_lambda = lambda {PARAMETER}: probe_{probe.name}({PARAMETER})")])
        b.step([Line(f"probe_{probe.name}_lambda({b.site.subject})", (probe.name,), "call")])


def decorator(b: _Builder) -> None:
    """A function wrapped by a decorator whose wrapper calls it."""
    b.require("functools")
    b.preamble([
        Line("def probe_traced(function):"),
        Line(f"    @{b.names.functools}.wraps(function)"),
        Line("    def wrapper(*args, **kwargs):"),
        Line("        return function(*args, **kwargs)"),
        Line("    return wrapper"),
    ])
    _probe_functions(b, decorators=("@probe_traced",))
    for probe in b.site.probes:
        b.step([Line(f"probe_{probe.name}({b.site.subject})", (probe.name,), "call")])


def context_manager(b: _Builder) -> None:
    """The probe in `__exit__` of context managers whose `with` wraps the rest of the step."""
    probes = b.site.probes
    b.probes_in_training_file(probes)
    for probe in probes:
        exit_body = _body(probe, f"self.{PARAMETER}", b.names) + [Line("    return False")]
        b.preamble(_class(f"class Probe{_camel(probe.name)}Context:", [
            _function("__init__", f"self, {PARAMETER}", [Line(f"    self.{PARAMETER} = {PARAMETER}")]),
            _function("__enter__", "self", [Line("    return self")]),
            _function("__exit__", "self, *exc_info", exit_body),
        ], "Runs its probe when the step's tail leaves the block."))
    managers = ", ".join(f"Probe{_camel(p.name)}Context({b.site.subject})" for p in probes)
    b.step([Line(f"with {managers}:", tuple(p.name for p in probes), "call")])
    b.wrap_tail()


def alias(b: _Builder) -> None:
    """A name bound before the loop to the costly API itself, or to the probe's helper function."""
    probes = b.site.probes
    b.probes_in_training_file(probes)
    for probe in probes:
        if probe.name in API_ALIASES:
            target, arguments = API_ALIASES[probe.name]
            b.setup([Line(f"probe_{probe.name}_alias = {target(b.names)}")])
            b.step([Line(f"probe_{probe.name}_alias({arguments})", (probe.name,), "probe")])
        else:
            b.preamble(_function(f"probe_{probe.name}", PARAMETER, _body(probe, PARAMETER, b.names)))
            b.setup([Line(f"probe_{probe.name}_alias = probe_{probe.name}")])
            b.step([Line(f"probe_{probe.name}_alias({b.site.subject})", (probe.name,), "call")])


def getattr_literal(b: _Builder) -> None:
    """`getattr(instance, "name")(...)` with the method's name as a literal."""
    _runner_class(b)
    b.setup([Line("probe_runner = ProbeRunner()")])
    for probe in b.site.probes:
        b.step([Line(f'getattr(probe_runner, "probe_{probe.name}")({b.site.subject})', (probe.name,), "call")])


KINDS: dict[str, Callable[[_Builder], bool | None]] = {
    "inline": inline,
    "helper_module": helper_module,
    "self_method": self_method,
    "local_instance": local_instance,
    "instance_at_call": instance_at_call,
    "init_attribute": init_attribute,
    "inherited_method": inherited_method,
    "model_parameter": model_parameter,
    "callback_argument": callback_argument,
    "callback_list": callback_list,
    "functools_partial": functools_partial,
    "lambda": lambda_,
    "decorator": decorator,
    "context_manager": context_manager,
    "alias": alias,
    "getattr_literal": getattr_literal,
}


def inject(kind: str, site: Site) -> Injection | None:
    """The edited files for one path kind, or None when the kind does not apply to the loop."""
    builder = _Builder(site)
    if KINDS[kind](builder) is False:
        return None
    return builder.render(kind)
