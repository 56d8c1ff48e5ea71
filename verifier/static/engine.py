"""The static engine for one file: one parse, one walk feeding the heat model and every rule.

Per file: read and decode, parse with libcst, walk once (imports, heat, type facts and all
rule visitors share the walk), resolve heat, turn candidates into findings (severity by heat,
config overrides, suppression comments), and resolve positions only when something remains.
A file that cannot be read, decoded or parsed yields one VP900 finding; the run goes on.
"""

from __future__ import annotations

import ast
import functools
import itertools
import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from verifier.config import Settings
from verifier.findings import Category, Evidence, Finding, Heat, Severity, SeverityByHeat
from verifier.static.autofix import as_autofix
from verifier.static.bindings import DEVICE_TENSOR, HOST_TENSOR, NUMBER, SOURCE, TENSOR, Bindings, needs_reanalysis
from verifier.static.run_lists import run_long_lists
from verifier.static.conditions import Conditions
from verifier.static.context import ModuleContext
from verifier.static.deferred import EVERY_INPUT, DeferredSeverity, JudgementInput
from verifier.static.discovery import import_root_for, module_name_for
from verifier.static.guards import Guards
from verifier.static.facts import Kind, NameFacts, defines_its_own_loss_scaler, may_define_a_loss_scaler
from verifier.static.amp import PRECISION_CHOSEN
from verifier.static.autograd import GradMode, grad_mode_of
from verifier.static.local_names import names_bound_in
from verifier.static.losses import backward_operands, module_backward_operands
from verifier.static.heat import FunctionFacts, HeatModel, Where, heat_of, heat_trace
from verifier.static.host_reads import HostReads
from verifier.static.names import ImportTable, code_of, iterated_source
from verifier.static.notebook import in_cell, is_notebook, read_notebook
from verifier.static.parse import parse_module
from verifier.static.placement import HostData, Origin
from verifier.static.places import Place, PlaceFacts, Placement
from verifier.static.positions import positions as positions_of
from verifier.static.pytest_files import is_test_code
from verifier.static.proofs import allowed, premises, replacing, worth_reporting
from verifier.static.rule import Candidate, Proof, Rule
from verifier.static.syncs import sync_of_call
from verifier.static.trace_lines import source_lines
from verifier.static.source import Source, UnreadableSource, read_source
from verifier.static.suppression import INVALID_SUPPRESSION, UNUSED_SUPPRESSION, Suppressions, mentions_a_directive
from verifier.static.tracker import Tracker
from verifier.static.walk import Hooks, walk

UNANALYSABLE = "VP900"
# Text that makes a file part of a training loop's call graph even when no rule fires in it. A
# function definition is enough: a module that only forwards a call (`def relay(x): return
# wait(x)`) carries the step's heat to the module it calls.
HEAT_TOKENS = ("backward", "loader", ".step(", "zero_grad", "batches", "def", "lambda")
_MAX_SNIPPET_LINES = 12
# A name followed by a call's parenthesis (`one_step(`): what a file may call.
_CALLED_NAME = re.compile(r"(\w+)\(")


@dataclass
class ModuleAnalysis:
    """Findings under this module's own heat, plus the heat summary for the project-wide pass."""

    findings: list[Finding]
    heat: HeatModel | None = None
    local_facts: dict[str, FunctionFacts] = field(default_factory=dict)
    candidates: list[CandidateHeat] = field(default_factory=list)
    # Findings a suppression comment silenced: counted in every output, never scored.
    suppressed: list[Finding] = field(default_factory=list)
    # Test code reports every finding at ONCE (`reports_once`): its heat never changes one.
    test_code: bool = False

    def findings_may_change(self) -> bool:
        """After a project-wide pass updated `heat` in place: could a finding be different now?

        Only where a candidate's heat changed and its table reports at the old or the new
        heat, or where a deferred judgement's inputs changed (then its table may differ too)
        and a table it could decide on reports at one of those heats. In test code every
        finding reports at ONCE, so only a judgement's inputs count there.
        """
        if self.heat is None:
            return False
        if needs_reanalysis(self.heat):
            return True
        for candidate in self.candidates:
            function = candidate.where.function
            if function is not None and (function.opt_in_site is not None or function.opt_in_trace):
                return True  # reached only under an opt-in setting: its frequency premise changes
            now, table = heat_of(candidate.where), candidate.table
            reported = (Heat.ONCE,) if self.test_code else (candidate.heat, now, Heat.ONCE)
            if (
                candidate.inputs is not None
                and candidate.may_report_at(reported)
                and self.heat.judgement_inputs(candidate.where, candidate.reads) != candidate.inputs
            ):
                return True
            if self.test_code:
                continue
            if now is not candidate.heat and table is not None and (
                table.at(now) is not None or table.at(candidate.heat) is not None
            ):
                return True
        return False


@dataclass(frozen=True)
class CandidateHeat:
    """What a candidate's finding depends on, kept (without syntax nodes) for the project pass."""

    where: Where
    heat: Heat
    # The severity per heat: the rule's, or what its deferred judgement decided (None: dropped).
    table: SeverityByHeat | None
    # For a deferred judgement, `heat.judgement_inputs(where)` when it decided; else None.
    inputs: tuple | None = None
    # For a deferred judgement, every table it could decide on, when its rule names them.
    outcomes: tuple[SeverityByHeat, ...] | None = None
    # For a deferred judgement, what of the resolved heat its decision reads (`inputs` holds those).
    reads: tuple[JudgementInput, ...] = EVERY_INPUT

    def may_report_at(self, heats: tuple[Heat, ...]) -> bool:
        """Could a decision taken again report at any of `heats`? (Test code reports at ONCE.)"""
        if self.outcomes is None:
            return True
        return any(table.at(heat) is not None for table in self.outcomes for heat in heats)


@dataclass
class FileResult:
    path: str
    findings: list[Finding]
    seconds: float = 0.0
    internal_error: str | None = None
    analysis: ModuleAnalysis | None = field(default=None, repr=False)
    skipped: bool = False
    suppressed: list[Finding] = field(default_factory=list)


@functools.cache
def needed_tokens(rules: tuple[type[Rule], ...]) -> tuple[str, ...]:
    """Any of these in a file's text means it must be parsed; none means nothing can be found.

    Ordered so that a file that must be parsed usually says so at the first test: `torch`, then
    shorter tokens (more often present) first; each absent token costs a scan of the whole text.
    """
    tokens = {t for rule in rules for t in rule.tokens} | set(HEAT_TOKENS)
    return tuple(sorted(tokens, key=lambda token: (token != "torch", len(token), token)))


def _mentions_any(source: Source, tokens: tuple[str, ...]) -> bool:
    """Any token in the text; for a file in another encoding, in its bytes too. Bytes that read
    `torch` but decode to something else (an EBCDIC cookie on ASCII text) are not skipped unread:
    the parser says what they are. Tokens are ASCII, so in UTF-8 text and bytes agree."""
    if any(token in source.text for token in tokens):
        return True
    return source.encoding not in ("utf-8", "utf-8-sig") and any(token.encode() in source.data for token in tokens)


def _may_reexport(path: str, source: Source) -> bool:
    """A package's `__init__.py` that imports: callers may import its names from the package
    (`from losses import FocalLoss`), so its imports are read to follow them (`HeatModel.reexports`)."""
    return os.path.basename(path) == "__init__.py" and "import" in source.text


def analyze_file(
    path: str,
    rules: Sequence[type[Rule]],
    settings: Settings,
    external: dict[str, FunctionFacts] | None = None,
) -> FileResult:
    started = time.perf_counter()
    analysis = None
    error = None
    cells = None
    try:
        if is_notebook(path):
            source, cells = read_notebook(path, settings.max_file_size)
        else:
            source = read_source(path, settings.max_file_size)
        if settings.prefilter and not _mentions_any(source, needed_tokens(tuple(rules))) and not _may_reexport(path, source):
            # No rule can fire here, so every suppression in the file is unused.
            audit = (
                audit_suppressions(path, _suppressions(source, settings, parsed=False), rules, settings)
                if mentions_a_directive(source.text) else []
            )
            if cells is not None:
                audit = [in_cell(f, cells) for f in audit]
            return FileResult(path, audit, time.perf_counter() - started, skipped=True)
        with _TimeLimit(settings.file_timeout):
            analysis = analyze_source(path, source, rules, settings, module_name_for(path), external)
        findings = analysis.findings
    except UnreadableSource as problem:
        findings = [unanalysable_finding(path, str(problem), settings, blocks=problem.unanalysable, line=problem.line)]
    except FileTimeout:
        return unanalysable_result(path, timeout_message(settings.file_timeout), rules, settings)
    except MemoryError:
        return unanalysable_result(path, "analysis ran out of memory", rules, settings)
    except RecursionError:
        findings = [unanalysable_finding(path, "code nested too deeply to analyse", settings)]
    except Exception as crash:  # a bug in verify-perf must not take the whole run down
        error = f"internal error while analysing: {type(crash).__name__}: {crash}"
        findings = [unanalysable_finding(path, error, settings)]
    if not any(rule.code == UNANALYSABLE for rule in rules):
        findings = [f for f in findings if f.code != UNANALYSABLE]
    suppressed = analysis.suppressed if analysis is not None else []
    if cells is not None:
        findings = [in_cell(f, cells) for f in findings]
        suppressed = [in_cell(f, cells) for f in suppressed]
    return FileResult(path, findings, time.perf_counter() - started, error, analysis, suppressed=suppressed)


def number_lines_again(path: str, heat: HeatModel, settings: Settings) -> bool:
    """Give a stored heat summary its lines when a trace in another file passes through it but
    its own analysis did not compute them (nothing there looked hot on its own): from Python's
    line table of the file, else by analysing it once more. False (lines stay 0) when it cannot
    be read or no longer matches."""
    try:
        source = read_notebook(path, settings.max_file_size)[0] if is_notebook(path) else read_source(
            path, settings.max_file_size
        )
        if heat.number_lines_from(source_lines(source.text)):
            return True
        with _TimeLimit(settings.file_timeout):
            fresh = analyze_source(path, source, (), settings, module_name_for(path), lines=True).heat
    except Exception:  # unreadable, changed or too slow now: the trace keeps line 0 there
        return False
    return fresh is not None and heat.copy_lines(fresh)


def unanalysable_result(path: str, message: str, rules: Sequence[type[Rule]], settings: Settings) -> FileResult:
    """The result for a file whose analysis never finished (its worker crashed or was stopped)."""
    reported = any(rule.code == UNANALYSABLE for rule in rules)
    return FileResult(path, [unanalysable_finding(path, message, settings)] if reported else [])


def timeout_message(limit: float | None) -> str:
    return f"analysis exceeded the per-file time limit of {limit:g} s (--file-timeout)"


def run_limit_message(limit: float | None) -> str:
    return f"not analysed: the run reached its time limit of {limit:g} s first (--run-timeout)"


class FileTimeout(Exception):
    """Raised inside a file's analysis when it exceeds the per-file time limit."""


class _TimeLimit:
    """A per-file wall-clock limit via SIGALRM (main thread, Unix); elsewhere no limit."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.active = bool(seconds) and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def __enter__(self) -> None:
        if self.active:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc) -> None:
        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)

    def _expire(self, signum, frame) -> None:
        raise FileTimeout()


def analyze_source(
    path: str,
    source: Source,
    rules: Sequence[type[Rule]],
    settings: Settings,
    module_name: str = "",
    external: dict[str, FunctionFacts] | None = None,
    lines: bool = False,
) -> ModuleAnalysis:
    """Analyse decoded source. Raises UnreadableSource when it does not parse. With `lines`, the
    heat summary's loops and call sites get their lines even where nothing here needs them."""
    if may_nest_too_deeply(source.text):
        # libcst's native parser crashes on deep brackets; Python's own parser stops at its limit.
        rejected = _python_syntax_error(source.text)
        if rejected is not None:
            raise rejected
    try:
        module = parse_module(source.text)
    except cst.ParserSyntaxError as error:
        raise _syntax_error(source.text, error) from None
    except RecursionError:
        raise UnreadableSource("code nested too deeply for the parser", unanalysable=True) from None

    imports = ImportTable()
    heat = HeatModel(imports, module_name, import_root_for(path) if module_name else "", path=path)
    if external:
        # What every visible call site passes: the parameters start with it (`bindings.py`).
        heat.seeds = {key: known.bound for key, known in external.items() if known.bound}
        heat.returned = {key: known.returns for key, known in external.items() if known.returns}
        heat.returned_at = {key: dict(known.returned_at) for key, known in external.items() if known.returned_at}
        heat.routes = {key: known.routes for key, known in external.items() if known.routes}
        heat.read_by = {key: known for key, known in external.items() if known.reads_params or known.returns_read}
        heat.stepping = frozenset(key for key, known in external.items() if known.steps)
    facts = NameFacts(imports)
    facts.returned_by = heat.returned_by
    facts.own_loss_scaler = may_define_a_loss_scaler(source.text) and defines_its_own_loss_scaler(module)
    places = PlaceFacts(imports, facts)
    context = ModuleContext(path, source.text, module, imports, heat, facts, places, config_defaults=settings.config_defaults)
    # A module that never names a device runs on the host unless a caller's module does.
    heat.accelerated = context.may_use_accelerator
    heat.precision_chosen = context.mentions_in_code(*PRECISION_CHOSEN)
    # A rule whose tokens the file never mentions cannot fire here: it does not join the walk.
    # Calls under rate-limit guards make their callees periodic, not per step (interprocedural).
    guards = context.tracker(Guards)
    heat.guard_probe = lambda: guards.guarded
    # The branch each call and finding runs under: part of its frequency premise (`proofs.py`).
    conditions = context.tracker(Conditions)
    heat.condition_probe = context.condition_probe = conditions.current
    # A call of a project function known to return a tensor or a number brings values the
    # file's own text may never name (`running = one_step(...)`, then `if running > 10:`).
    # One scan of the text for the names it calls, not one search per known function.
    returning = {key.rsplit(".", 1)[-1] for key in heat.returned}
    calls_returning = bool(returning) and not returning.isdisjoint(_CALLED_NAME.findall(source.text))
    active = [rule(context) for rule in rules if calls_returning or context.mentions(*rule.tokens)]
    host = context.trackers.get(HostData)
    reads = context.trackers.get(HostReads)
    read_before = reads.is_read if reads is not None else (lambda name: False)
    is_host_batch = (lambda node: host.origin_of(node) is Origin.BATCH) if host is not None else (lambda node: False)
    place_of = lambda node: None if (found := places.placement_of(node)) is None else found.place  # noqa: E731
    lists = run_long_lists(module, source.text)
    mentions_backward = "backward" in source.text or "training_step" in source.text
    if mentions_backward:
        facts.set_module_losses(module_backward_operands(module))
    bindings = Bindings(heat, facts, is_host_batch, place_of, lists, read_before, imports=imports)
    own = _ModuleFacts(heat, facts, places, imports, bindings, mentions_backward)
    heat.grad_off_probe = own.grad_off
    visitors, leavers = _dispatch_tables(own, [*context.trackers.values(), *active])
    try:
        walk(module, visitors, leavers)
        heat.resolve(external)
        judged = [_judge(candidate, heat) for rule in active for candidate in rule.candidates]
        suppressions = _suppressions(source, settings, parsed=True)
        test_code = reports_once(path, settings, source.text)
        findings = _to_findings(path, source, module, judged, settings, suppressions, heat, test_code) if judged else []
        if lines and not heat.numbered:
            # Another module's trace passes through this one's calls and loops: they need lines,
            # from Python's line table where it agrees with the walk (far cheaper than positions).
            # Without `lines` they wait until a trace needs them (`number_lines_again`).
            if not heat.number_lines_from(source_lines(source.text)):
                heat.number_lines(positions_of(module))
    except RecursionError:
        # Python accepts a few expression shapes (e.g. `a + a + ... + a`) deeper than code can recurse.
        raise UnreadableSource("code nested too deeply to analyse", unanalysable=True) from None
    finally:
        # Rules, trackers and deferred judgements refer to each other and to the tree: left to the
        # cycle collector, every parsed tree would outlive its file (memory and GC time both grow).
        context.release()
        for rule in active:
            rule.candidates = []
        visitors.clear()
        leavers.clear()
    local_facts = heat.facts()
    heat.release_tree()
    findings = sorted([*findings, *audit_suppressions(path, suppressions, rules, settings)])
    return ModuleAnalysis(
        findings, heat, local_facts, [_without_tree(record) for _, record in judged], suppressed=suppressions.suppressed,
        test_code=test_code,
    )


# Rules write `{often}` / `{loop}` where the wording depends on how often the line really runs.


def heat_wording(message: str, heat: Heat) -> str:
    return message.replace("{often}", heat.often).replace("{loop}", heat.where)


def reports_once(path: str, settings: Settings, text: str) -> bool:
    """Test code runs a few steps on purpose: every line of it runs "once" unless included."""
    return not settings.include_tests and is_test_code(path, text)


def _without_tree(record: CandidateHeat) -> CandidateHeat:
    """The record as a stored summary keeps it: the branch it sits in by its kind and text, not
    its syntax node (a summary holding a node cannot be cached, and its file would be analysed
    again on every run that cannot reuse the whole run)."""
    condition = record.where.condition
    if condition is None or condition.node is None:
        return record
    return replace(record, where=replace(record.where, condition=condition.released()))


def _judge(candidate: Candidate, heat: HeatModel) -> tuple[Candidate, CandidateHeat]:
    """A candidate's heat and severity table once the heat model has resolved."""
    severity, where = candidate.severity, candidate.where
    if isinstance(severity, DeferredSeverity):
        return candidate, CandidateHeat(
            where, heat_of(where), severity.decide(), heat.judgement_inputs(where, severity.reads), severity.outcomes,
            severity.reads,
        )
    return candidate, CandidateHeat(where, heat_of(where), severity)


MAX_NESTING = 200  # CPython's own limit on nested brackets; libcst's native parser crashes far beyond it
# Every byte but the six ASCII brackets; in UTF-8 no byte of another character is below 0x80.
_NOT_A_BRACKET = bytes(byte for byte in range(256) if byte not in b"()[]{}")
_BRACKET_STEP = {ord("("): 1, ord("["): 1, ord("{"): 1, ord(")"): -1, ord("]"): -1, ord("}"): -1}


def may_nest_too_deeply(text: str) -> bool:
    """True when the running count of open brackets passes MAX_NESTING somewhere (at C speed).

    Brackets in strings and comments count too, so this only says when to ask Python's parser;
    it never decides on its own that a file is invalid.
    """
    brackets = text.encode("utf-8", "surrogatepass").translate(None, _NOT_A_BRACKET)
    if len(brackets) <= MAX_NESTING:
        return False
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > MAX_NESTING


def _python_syntax_error(text: str) -> UnreadableSource | None:
    """Python's own verdict: the syntax error it reports (at its line), or None when it accepts
    the text or cannot decide (too deep or too large for it as well)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences: not ours to report
            ast.parse(text)
    except SyntaxError as python_error:
        return UnreadableSource(f"syntax error: {python_error.msg}", python_error.lineno or 1)
    except ValueError as python_error:  # e.g. a null byte
        return UnreadableSource(f"syntax error: {python_error}", 1)
    except (RecursionError, MemoryError):
        return None
    return None


def _syntax_error(text: str, error: cst.ParserSyntaxError) -> UnreadableSource:
    """Python's own compiler names the line and the problem more precisely than libcst does.
    Code that this Python accepts but libcst cannot parse was not analysed: it fails closed."""
    rejected = _python_syntax_error(text)
    if rejected is not None:
        return rejected
    return UnreadableSource(f"libcst cannot parse this file: {error.message}", error.raw_line, unanalysable=True)


def _dispatch_tables(first: object, walkers: list[Rule | Tracker]) -> tuple[Hooks, Hooks]:
    """Per node type, the hooks in call order: `first` visits before every walker and leaves after."""
    visitors: Hooks = {}
    leavers: Hooks = {}
    for table, order, visiting in ((visitors, (first, *walkers), True), (leavers, (*walkers, first), False)):
        for walker in order:
            for is_visit, node_type, attribute in _hooks_of(type(walker)):
                if is_visit is visiting:
                    table.setdefault(node_type, []).append(getattr(walker, attribute))
    return visitors, leavers


@functools.cache
def _hooks_of(walker_class: type) -> tuple[tuple[bool, type, str], ...]:
    """A rule's or tracker's `visit_<Node>` / `leave_<Node>` methods, looked up once per process."""
    hooks = []
    for attribute in dir(walker_class):
        prefix, _, node_name = attribute.partition("_")
        if prefix not in ("visit", "leave") or not node_name:
            continue
        node_type = getattr(cst, node_name, None)
        if not isinstance(node_type, type):
            raise TypeError(f"{walker_class.__name__}.{attribute}: no libcst node {node_name}")
        hooks.append((prefix == "visit", node_type, attribute))
    return tuple(hooks)


class _ModuleFacts:
    """The engine's own share of the walk: imports, heat and type facts, in walk order.

    Its visits come before any tracker's or rule's, and its leaves after them: a rule leaving
    `x = f()` still sees what `x` meant before the assignment.
    """

    def __init__(
        self, heat: HeatModel, facts: NameFacts, places: PlaceFacts, imports: ImportTable, bindings: Bindings,
        mentions_backward: bool = True,
    ) -> None:
        self.heat, self.facts, self.places, self.imports, self.bindings = heat, facts, places, imports, bindings
        # Inside an `except` handler an import is the fallback of the one its `try` made
        # (`try: from torch import GradScaler` / `except ImportError: from torch.cuda.amp ...`).
        self._handlers = 0
        # Only a module that says `backward` can hand a name to one: the body scan is skipped elsewhere.
        self.mentions_backward = mentions_backward
        # Per function being walked (the module first): for each `with` open in it, whether it
        # turns gradients off; a function's own grad-mode decorator opens its frame.
        self._grad_off: list[list[bool]] = [[]]

    def grad_off(self) -> bool:
        """Is the walk under `torch.no_grad()`, `inference_mode()` or `set_grad_enabled(False)`?"""
        return any(self._grad_off[-1])

    def visit_With(self, node: cst.With) -> None:
        self._grad_off[-1].append(any(grad_mode_of(item.item, self.imports) is GradMode.DISABLED for item in node.items))

    def leave_With(self, node: cst.With) -> None:
        self._grad_off[-1].pop()

    def visit_Call(self, node: cst.Call) -> None:
        self.bindings.on_call(node, self.heat.on_call(node, self.bindings.via_of(node)))
        self.facts.on_call(node)
        loops = self.heat.where().loops
        if loops and not loops[-1].reads:
            self._note_read(node, loops)

    def _note_read(self, node: cst.Call, loops) -> None:
        """A host read of a value known to be a tensor, not shown in host memory: every loop of
        the function around it waits for the device each iteration (`LoopInfo.reads`)."""
        read = sync_of_call(node, self.facts, self.imports)
        if read is None or not self.facts.is_tensor(read.subject):
            return
        placement = self.places.placement_of(read.subject)
        if placement is not None and placement.place is Place.HOST:
            return
        code = code_of(read.node)
        for loop in loops:
            if not loop.reads:
                loop.reads = code

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter_function(node, node.name.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        # `log = lambda t: t.item()`: the lambda is a function named `log`, run where it is called.
        if type(node.value) is cst.Lambda and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            self.heat.name_lambda(node.value, node.targets[0].target.value)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        name = self.heat.lambda_name(node)
        if name is not None:
            self._enter_function(node, name)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        if self.heat.lambda_name(node) is not None:
            self.facts.on_return(node.body)
            self.bindings.on_return(node.body)
            self._leave_function()

    def _enter_function(self, node: cst.FunctionDef | cst.Lambda, name: str) -> None:
        if type(node) is cst.FunctionDef:
            self.bindings.note_module_name(name)
            if self.heat.function_depth == 0 and not self.heat.in_class:
                self.imports.shadow(name)  # a module-level `def log` hides `from math import log`
        decorators = node.decorators if type(node) is cst.FunctionDef else ()
        self._grad_off.append([any(grad_mode_of(d.decorator, self.imports) is GradMode.DISABLED for d in decorators)])
        self.heat.enter_function(node, name)
        function = self.heat.where().function
        losses = backward_operands(node, function.hook) if self.mentions_backward and type(node) is cst.FunctionDef else frozenset()
        self.facts.enter_function(name, function.order, losses)
        if type(node) is cst.FunctionDef:
            self.facts.declare(node)
        self.places.enter_function()
        self.bindings.enter_function(function)
        for name, fact in function.bound:
            kind = _SEEDED_KINDS.get(fact)
            if kind is not None:
                self.facts.seed(name, kind)
            if fact == DEVICE_TENSOR:
                how = "passed in on the accelerator by every caller" if name in function.params else (
                    "a global every module-level binding puts on the accelerator"
                )
                self.places.seed(name, Placement(Place.DEVICE, how))
            elif fact == HOST_TENSOR:
                how = "passed in host memory by every caller" if name in function.params else (
                    "a global every module-level binding puts in host memory"
                )
                self.places.seed(name, Placement(Place.HOST, how))

    def visit_For(self, node: cst.For) -> None:
        self.heat.enter_loop(node)
        self.bindings.on_for(node.target, node.iter)
        self.facts.bind_loop(node.target, node.iter)
        self.places.bind_loop(node.target, node.iter)
        self.bindings.note_module_binding(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.places.bind_loop(node.target, node.iter)

    def visit_Yield(self, node: cst.Yield) -> None:
        self.bindings.on_yield(node)

    def visit_While(self, node: cst.While) -> None:
        self.heat.enter_loop(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.heat.enter_block(node)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.heat.enter_block(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.heat.function_depth == 0 and not self.heat.in_class:
            self.imports.shadow(node.name.value)
        self.imports.note_class(node)
        self.bindings.note_module_name(node.name.value)
        self.heat.enter_class(node)
        self.facts.enter_class(node)
        self.places.enter_class(node)
        self.bindings.enter_class()

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.bindings.note_module_name(item.name.value, declared_global=True)

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node, fallback=self._handlers > 0)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node, fallback=self._handlers > 0)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._handlers += 1

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._handlers -= 1

    def visit_Expr(self, node: cst.Expr) -> None:
        self.places.on_statement(node)

    def leave_Assign(self, node: cst.Assign) -> None:
        targets = [t.target for t in node.targets]
        for target in targets:
            # Read before the target is rebound: `x = x.sum()` asks where the old `x` lives.
            device_tensor = type(target) in (cst.Name, cst.Attribute) and self.places.makes_device_tensor(node.value)
            # Where it lives first: it reads the value's kind before the target is rebound.
            self.places.bind(target, node.value)
            _bind(self.facts, target, node.value)
            if device_tensor:
                self.facts.note_device_tensor(target)
            if type(node.value) in (cst.Attribute, cst.IfExp):
                self.imports.add_alias(target, node.value)
        self.bindings.on_assign(targets, node.value)
        self.heat.on_assign(targets, node.value)
        for target in targets:
            self.bindings.note_module_binding(target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.places.bind(node.target, node.value)
            _bind(self.facts, node.target, node.value)
            self.bindings.on_assign([node.target], node.value)
            self.bindings.note_module_binding(node.target)

    def leave_Return(self, node: cst.Return) -> None:
        self.facts.on_return(node.value)
        self.bindings.on_return(node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.places.bind_in_place(node.target, node.value)
        self.facts.bind_in_place(node.target, node.value)
        self.bindings.on_aug_assign(node.target, node.value)
        self.bindings.note_module_binding(node.target)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._leave_function()

    def _leave_function(self) -> None:
        # A parameter whose kind the walk needed and did not know: a tensor bound to it by every
        # call site (the project pass) could change a finding, so the file is analysed again then.
        function = self.heat.where().function
        unknown = self.facts.unknown_in_function()
        for name in unknown & function.params:
            self.heat.note_dependency(name, "tensor")
        # Names read and never bound here are the module's (in a function not nested in another:
        # a closure's free names may be its enclosing function's).
        outside = unknown - function.params
        if outside and self.heat.function_depth == 1:
            free = outside - names_bound_in(function.node)
            if free:
                self.heat.note_free_names(frozenset(free))
        self.heat.leave_function()
        self.facts.leave_function()
        self.places.leave_function()
        self.bindings.leave_function()
        self._grad_off.pop()

    def leave_For(self, node: cst.For) -> None:
        self.heat.leave_loop()

    def leave_While(self, node: cst.While) -> None:
        self.heat.leave_loop()

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.heat.leave_class()
        self.facts.leave_class()
        self.places.leave_class()
        self.bindings.leave_class()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.heat.on_context(node.item)

    def leave_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is None:
            return
        target = node.asname.name
        if type(node.item) is cst.Call and iterated_source(node.item) is not node.item:
            # `with tqdm(loader) as bar:` enters the bar itself: as `bar = tqdm(loader)`.
            self.places.bind(target, node.item)
            self.heat.on_assign([target], node.item)
        else:
            self.places.bind(target, None)
        _bind_unknown(self.facts, target)
        self.bindings.note_module_binding(target)


# A parameter bound to a number or a batch source starts as that kind (a host batch: `HostData`).
_SEEDED_KINDS = {
    NUMBER: Kind.NUMBER, SOURCE: Kind.DATALOADER, TENSOR: Kind.TENSOR, DEVICE_TENSOR: Kind.TENSOR, HOST_TENSOR: Kind.TENSOR,
}


def _bind(facts: NameFacts, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
    facts.bind(target, value)


def _bind_unknown(facts: NameFacts, target: cst.BaseExpression) -> None:
    if type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            _bind_unknown(facts, element.value)
    elif type(target) is cst.StarredElement:
        _bind_unknown(facts, target.value)
    else:
        facts.bind(target, None)


def _to_findings(
    path: str,
    source: Source,
    module: cst.Module,
    judged: list[tuple[Candidate, CandidateHeat]],
    settings: Settings,
    suppressions: Suppressions,
    heat: HeatModel,
    test_code: bool,
) -> list[Finding]:
    ignored_here = settings.ignored_in_file(path)
    kept: list[tuple[Candidate, Heat, Severity, SeverityByHeat]] = []
    for candidate, record in judged:
        rule = candidate.rule
        if rule.code in ignored_here:
            continue
        where_heat = Heat.ONCE if test_code else record.heat
        severity = record.table.at(where_heat) if record.table is not None else None
        if severity is None:
            continue
        severity = settings.severity_at(rule.code, where_heat, severity)
        kept.append((candidate, where_heat, severity, record.table))
    if not kept:
        return []

    positions = positions_of(module)
    heat.number_lines(positions)
    lines = source.lines()
    built: list[tuple[type[Rule], Finding]] = []
    for candidate, where_heat, severity, table in kept:
        rule = candidate.rule
        trace = heat_trace(candidate.where) if where_heat is not Heat.ONCE else ()
        proofs = premises(rule, candidate.evidence, where_heat, table, candidate.condition, trace)
        if not worth_reporting(proofs, rule.reports_unknown):
            continue
        if not rule.reports_through(trace):
            continue
        capped = rule.capped_through(trace) if trace else None
        if capped is not None:
            most, proof = capped
            proofs = replacing(proofs, proof)
            severity = min(severity, most)
        severity = allowed(severity, proofs)
        span = positions[candidate.node]
        start, end = span.start, span.end
        snippet_end = min(end.line, start.line + _MAX_SNIPPET_LINES - 1)
        finding = Finding(
                path=path,
                line=start.line,
                column=start.column + 1,
                code=rule.code,
                end_line=end.line,
                end_column=end.column + 1,
                name=rule.name,
                severity=severity,
                category=rule.category,
                heat=where_heat,
                message=heat_wording(candidate.message, where_heat),
                source="\n".join(lines[start.line - 1 : snippet_end]),
                fix=candidate.fix,
                autofix=as_autofix(candidate.autofix, module, positions) if candidate.autofix else None,
                heat_trace=trace,
                evidence=tuple(_evidence(proof, path, positions) for proof in proofs),
            )
        built.append((rule, finding))
    return sorted(_one_finding_per_call(built, suppressions))


def _evidence(proof: Proof, path: str, positions) -> Evidence:
    """A stated premise with the line of the code that shows it."""
    if proof.node is not None and proof.node in positions:
        return Evidence(proof.premise, proof.status, proof.text, path, positions[proof.node].start.line)
    return Evidence(proof.premise, proof.status, proof.text, proof.path, proof.line)


def _one_finding_per_call(built: list[tuple[type[Rule], Finding]], suppressions: Suppressions) -> set[Finding]:
    """The findings left after suppression comments, where a finding of a rule that names a more
    precise cause (a repeated read, VP202) replaces a general one (a sync, VP201) at the same
    position, even when a comment suppresses it: the comment speaks for the call."""
    replaced = {
        (code, finding.line, finding.column) for rule, finding in built for code in rule.supersedes
    }
    return {
        finding for _, finding in built
        if (finding.code, finding.line, finding.column) not in replaced and not suppressions.suppresses(finding)
    }


def _suppressions(source: Source, settings: Settings, *, parsed: bool) -> Suppressions:
    return Suppressions(source.text, source.lines(), parsed=parsed, require_reason=settings.require_suppression_reason)


def audit_suppressions(path: str, suppressions: Suppressions, rules: Sequence[type[Rule]], settings: Settings) -> list[Finding]:
    """VP901/VP902 for this file's suppression comments, when those rules are selected.

    An entry is judged against every selected rule not ignored for this file: a rule that did
    not run here (its tokens are absent) could not have produced the finding it names.
    """
    wanted = {rule.code for rule in rules} & {INVALID_SUPPRESSION, UNUSED_SUPPRESSION}
    if not wanted or not suppressions.present:
        return []
    from verifier.rules import rule_by_selector

    ignored_here = settings.ignored_in_file(path)
    active = {r.code for r in settings.selected_rules() if r.code not in ignored_here}

    def rule_named(entry: str) -> str | None:
        exact = [r.code for r in rule_by_selector(entry) if entry in (r.code, r.name.upper())]
        return exact[0] if exact else None

    found = suppressions.audit(path, rule_named, active)
    return [f for f in found if f.code in wanted and f.code not in ignored_here]


def unanalysable_finding(path: str, message: str, settings: Settings, *, blocks: bool = True, line: int = 1) -> Finding:
    """VP900. A file that may be valid Python but could not be analysed (`blocks`) fails closed:
    HIGH unless `unanalysable = "warn"`; a file that is not valid source (syntax, encoding) is INFO.
    A severity configured for VP900 replaces both."""
    severity = Severity.HIGH if blocks and settings.unanalysable == "block" else Severity.INFO
    severity = settings.severity_at(UNANALYSABLE, Heat.ONCE, severity)  # `severity = { VP900 = ... }` decides for all
    return Finding(
        path=path,
        line=max(line, 1),
        column=1,
        code=UNANALYSABLE,
        end_line=max(line, 1),
        end_column=1,
        name="unanalysable-file",
        severity=severity,
        category=Category.ANALYSIS,
        heat=Heat.ONCE,
        message=message,
        fix=_UNANALYSABLE_FIX if blocks else "Fix the file so that Python can parse it, or exclude it.",
    )


_UNANALYSABLE_FIX = (
    "Split or simplify the file, raise the limit that stopped it (--file-timeout, max-file-size), or exclude it; "
    'set `unanalysable = "warn"` in [tool.verify-perf] to report such files without blocking.'
)
