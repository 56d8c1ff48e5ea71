"""VP203 synchronize-in-loop: `torch.cuda.synchronize()` every iteration."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat, TraceStep
from verifier.static.deferred import EVERY_INPUT, JudgementInput, deferred
from verifier.static.guards import GuardedRule, is_opt_in_flag
from verifier.static.heat import Where, reads_clock
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import method_name, terminal_name
from verifier.static.rule import Invalid, Proof
from verifier.static.syncs import sync_of_call
from verifier.static.walk import iter_descendants

_SYNCHRONIZE = frozenset(
    {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize", "torch.mps.synchronize"}
)
_TIMING = SeverityByHeat(step=Severity.LOW, epoch=Severity.LOW, once=None)
# A synchronize in a body that also reads a device tensor (right after it, or elsewhere in the
# body): the body already drains the queue there; a second wait per iteration costs a round trip
# and a launch gap, as a second read does.
_SECOND_WAIT = SeverityByHeat(step=Severity.LOW, epoch=Severity.LOW, once=None)
# A training step timed with a synchronize: a stall every step, but one whose cost is the overlap
# lost at the step boundary, not a wait in the middle of queued work: the catalogue's timing
# pattern (LOW). Judged on real code, the timed steps reported LOW were right 15 times of 15 and
# those reported MEDIUM 1 of 5 (the rest: too high).
_TIMED_STEP = SeverityByHeat(step=Severity.LOW, epoch=Severity.LOW, once=None)
# A synchronize whose block then reads CUDA events (`start.elapsed_time(end)`): the events
# cannot be read before their work is done, so this wait is the event-timing idiom's one wait,
# the rule's own fix. Once per epoch it costs nothing worth a finding; every step it is a
# timed step (LOW).
_EVENT_READ = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)


class SynchronizeInLoop(LambdaScopes, GuardedRule):
    code = "VP203"
    name = "synchronize-in-loop"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.HIGH, epoch=Severity.MEDIUM, once=None)
    cost = "`synchronize()` makes the host wait until every queued kernel has finished"
    summary = (
        "Finds `torch.cuda.synchronize()` (and stream/event `.synchronize()`) inside loops; beside a "
        "host timer in a benchmark it is a timing pattern (LOW), in a training step a per-step stall."
    )
    why = (
        "`synchronize()` blocks the host until every queued kernel finished. In a training loop it "
        "removes all overlap between CPU and GPU on every step. In a benchmark loop it measures the "
        "host's view (launch latency plus the sync) rather than device time."
    )
    example = """\
for _ in range(iters):
    torch.cuda.synchronize()
    start = time.perf_counter()
    model(x)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
"""
    use_instead = """\
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(iters):
    model(x)
end.record()
torch.cuda.synchronize()
per_iter_ms = start.elapsed_time(end) / iters
"""
    fix = "Remove the per-iteration synchronize; to time, record CUDA events and synchronize once after the loop."
    tokens = ("synchronize",)

    @classmethod
    def reports_through(cls, trace: tuple[TraceStep, ...]) -> bool:
        """Its walk leaves a synchronize under an opt-in flag (`if args.sync_each_step:`) alone, a
        choice the user makes; one in a helper called under such a flag is the same choice."""
        return not any(step.branch and _names_a_flag(step.branch) for step in trace)

    @classmethod
    def capped_through(cls, trace: tuple[TraceStep, ...]) -> tuple[Severity, Proof] | None:
        """A helper's synchronize called from a loop whose iteration already reads the device
        (`loss.item()`, then `sync()`) is a second wait, as one beside such a read in its own loop."""
        step = next((step for step in trace if step.waits), None)
        if step is None:
            return None
        return Severity.LOW, Proof.proven(
            Premise.COST,
            f"a second wait: the iteration of {step.path}:{step.line} already waits for the device at "
            f"`{step.waits}`; this one costs the launch gap after it",
            path=step.path, line=step.line,
        )
    references = (
        "https://pytorch.org/docs/stable/generated/torch.cuda.synchronize.html",
        "https://pytorch.org/docs/stable/generated/torch.cuda.Event.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Per function scope: the synchronize calls met, and whether a host timer is read.
        self._scopes: list[tuple[list[tuple[cst.Call, Where]], list[bool]]] = [([], [False])]
        self._flags: list[bool] = []
        # Each statement's next statement in its block, and the statement being walked.
        self._next_statement: dict[int, cst.BaseStatement] = {}
        self._statement: cst.BaseStatement | None = None
        # Synchronize calls whose next statement reads a device value anyway: what it reads.
        self._read_next: dict[int, str] = {}
        # Synchronize calls that a later statement of their block serves by reading CUDA events.
        self._event_reads: set[int] = set()
        # Per body that runs once per iteration (a loop's, or a function's outside its loops):
        # the first read of a device value in it.
        self._loop_reads: dict[int, str] = {}
        # Stream and event syncs (by call id): they wait for one stream's work, or the work before
        # one event, which may be all that is queued or little of it.
        self._partial_waits: set[int] = set()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for statement, following in zip(node.body, node.body[1:]):
            self._next_statement[id(statement)] = following

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(([], [False]))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._flush()

    def leave_Module(self, node: cst.Module) -> None:
        self._flush()

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.imports.call_name(node)
        calls, timed = self._scopes[-1]
        self._note_read(node)
        if reads_clock(node, qualified):
            timed[0] = True
        elif qualified in _SYNCHRONIZE or self._is_stream_or_event_sync(node):
            if qualified not in _SYNCHRONIZE:
                self._partial_waits.add(id(node))
            # Every N steps, or behind an opt-in flag (`if args.synchronize_step:`), is a choice.
            if not self.guarded and not self._opt_in:
                calls.append((node, self.context.heat.where(), self.context.condition_probe()))
                read = self._read_in_next_statement()
                if read is not None:
                    self._read_next[id(node)] = read
                if self._events_read_after():
                    self._event_reads.add(id(node))

    def _note_read(self, node: cst.Call) -> None:
        key = _body_of(self.context.heat.where())
        if key in self._loop_reads:
            return
        read = sync_of_call(node, self.context.facts, self.context.imports)
        # Only a read of a value known to be a tensor shows that the body already waits.
        if read is not None and self.context.facts.is_tensor(read.subject):
            self._loop_reads[key] = self.context.code_for(read.node)

    def _read_in_next_statement(self) -> str | None:
        """`torch.cuda.synchronize()` then `log(loss=loss.item())`: the next statement waits for
        the device anyway, so the sync on its own adds little; returns that read's code."""
        following = self._next_statement.get(id(self._statement)) if self._statement is not None else None
        if type(following) is not cst.SimpleStatementLine:
            return None
        for part in iter_descendants(following):
            if type(part) is cst.Call:
                read = sync_of_call(part, self.context.facts, self.context.imports)
                if read is not None:
                    return self.context.code_for(read.node)
        return None

    def _events_read_after(self) -> bool:
        """`ender.record(); torch.cuda.synchronize(); ms = starter.elapsed_time(ender)`: a later
        statement of the same block reads CUDA event times, which needs their work done."""
        following = self._next_statement.get(id(self._statement)) if self._statement is not None else None
        while following is not None:
            if any(type(part) is cst.Call and method_name(part) == "elapsed_time" for part in iter_descendants(following)):
                return True
            following = self._next_statement.get(id(following))
        return False

    def visit_If(self, node: cst.If) -> None:
        self._flags.append(is_opt_in_flag(node.test))

    def leave_If(self, node: cst.If) -> None:
        self._flags.pop()

    @property
    def _opt_in(self) -> bool:
        return any(self._flags)

    def _is_stream_or_event_sync(self, node: cst.Call) -> bool:
        """`torch.cuda.current_stream().synchronize()`, `stream.synchronize()`, `event.synchronize()`,
        also through a name bound to the method (`sync = torch.cuda.Event().synchronize; sync()`)."""
        if node.args:
            return False
        method = self.context.imports.bound_method(node) or node.func
        if type(method) is not cst.Attribute or method.attr.value != "synchronize":
            return False
        owner = method.value
        if type(owner) is cst.Call:
            return (self.context.imports.call_name(owner) or "").startswith("torch.")
        name = (terminal_name(owner) or "").lower()
        return "stream" in name or "event" in name

    def _flush(self) -> None:
        calls, timed = self._scopes.pop()
        for call, where, condition in calls:
            if id(call) in self._event_reads:
                self.report(
                    call,
                    "`synchronize()` to read CUDA event times: every step, it blocks the host until the device "
                    "is idle, so no work is queued ahead of the next step",
                    where=where, condition=condition, evidence=self._cost(call), severity=_EVENT_READ,
                    fix="Keep the events recorded every step and synchronize once per log interval or epoch to read them.",
                )
                continue
            second = self._second_wait(call, where)
            if second is not None:
                # Timed or not: the body's own read already drains the queue once per iteration.
                self.report(
                    call, second, where=where, condition=condition, evidence=self._cost(call), severity=_SECOND_WAIT,
                    fix="Remove the synchronize; read device values at a log interval.",
                )
                continue
            if not timed[0]:
                # Its own function reads no clock; the step loop that runs it may (`t0 =
                # time.perf_counter()` in the loop that calls a helper): timed either way.
                self.report(
                    call, "`synchronize()` in a loop blocks the host on every iteration", where=where, condition=condition,
                    evidence=self._cost(call),
                    severity=deferred(
                        lambda where=where: None if _step_reads_clock(where) else self.severity,
                        outcomes=(self.severity,), reads=EVERY_INPUT,
                    ),
                )
                self._report_timed_step(call, where, condition, lambda where=where: _step_reads_clock(where))
                continue
            # A clock read beside it: a benchmark's timing, unless the loop trains (reading a clock
            # does not make a training loop a benchmark). Which one is known once loops are classified.
            self.report(
                call,
                "`synchronize()` in a timing loop stalls the queue every iteration and times "
                "launch plus sync; record CUDA events around the loop and synchronize once",
                where=where,
                condition=condition,
                evidence=self._cost(call),
                severity=deferred(
                    lambda where=where: _TIMING if _times_a_benchmark(where) and not _brackets_a_measurement(where) else None,
                    outcomes=(_TIMING,),
                    reads=_READS,
                ),
                fix="Record `torch.cuda.Event(enable_timing=True)` around the loop and synchronize once.",
            )
            self._report_timed_step(call, where, condition, lambda: True)

    def _cost(self, call: cst.Call) -> tuple[Proof, ...]:
        """The cost premise of a stream or event sync is assumed: how much it waits for depends
        on what the stream holds or the event follows."""
        if id(call) not in self._partial_waits:
            return ()
        return (Proof.assumed(
            Premise.COST, "a stream or event `synchronize()` waits for that stream's queued work (or the work before the event)",
        ),)

    def _second_wait(self, call: cst.Call, where: Where) -> str | None:
        """The message for a synchronize whose body reads a device tensor anyway, else None."""
        read = self._read_next.get(id(call))
        if read is not None:
            return (
                f"`synchronize()` right before `{read}`, which waits for the device anyway: on its own it "
                "adds little, the read is the per-step wait"
            )
        beside = self._loop_reads.get(_body_of(where))
        if beside is not None:
            return (
                f"`synchronize()` in a loop whose body already waits for the device at `{beside}`: "
                "a second wait every iteration, which costs the launch gap after it"
            )
        return None

    def _report_timed_step(self, call: cst.Call, where: Where, condition, timed) -> None:
        """A training step timed with a synchronize (`timed()` says whether it is timed at all)."""
        self.report(
            call,
            "`synchronize()` every step to time it blocks the host until the device is idle, so no "
            "work is queued ahead of the next step; time steps with CUDA events",
            where=where,
            condition=condition,
            evidence=self._cost(call),
            severity=deferred(
                lambda: _TIMED_STEP if timed() and not _times_a_benchmark(where) else None,
                outcomes=(_TIMED_STEP,),
                reads=EVERY_INPUT,  # the loop that times it may be a caller's
            ),
            fix="Record `torch.cuda.Event(enable_timing=True)` around the step and read it when logging.",
        )

    VALID = (
        """\
import torch
for x, y in loader:
    loss = model(x).sum()
    loss.backward()
torch.cuda.synchronize()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
for x in loader:
    loss = model(x.cuda()).sum()
    print(loss.item())
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
""",
            line=7,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch
for x, y in loader:
    loss = model(x).sum()
    loss.backward()
    torch.cuda.synchronize()
""",
            line=5,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
import time
from torch.cuda import synchronize

def benchmark(fn, x, iters=100):
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn(x)
        synchronize()
        times.append(time.perf_counter() - start)
    return times
""",
            line=9,
            severity=Severity.LOW,
        ),
    )


# What the judgements below read of the resolved heat: the loops around the call, and for code
# outside loops the function's own timing flag (known from its name, no input of the pass).
_READS = (JudgementInput.LOOPS,)


def _body_of(where: Where) -> int:
    """The body `where` sits in, by id: its innermost loop's, else its function's own (a helper
    the step calls reads and synchronizes in one body, as the same lines inline would)."""
    if where.loops:
        return id(where.loops[-1].node)
    return id(where.function)


def _times_a_benchmark(where: Where) -> bool:
    """Is the timed loop around `where` a measurement rather than a training loop? A step loop
    that updates parameters (or trains through a call) is training, whatever clock it reads; a
    benchmark's timed loop, an evaluation or an unclassified loop is a measurement. Outside
    loops, a function named for timing (`measure_latency`) measures."""
    for loop in reversed(where.loops):
        if loop.is_step:
            return not (loop.rollout or loop.steps_here or loop.steps_in_call or loop.trains or loop.because_site is not None)
        if loop.is_eval or loop.is_epoch:
            return True
    if where.loops:
        return True
    return where.function is not None and where.function.timing


def _step_reads_clock(where: Where) -> bool:
    """Does the step loop that makes `where` hot read a clock in its body? Followed up the calls
    (a helper's synchronize is timed by the loop that calls it every step), as the heat trace is."""
    seen: set[int] = set()
    while True:
        for loop in reversed(where.loops):
            if loop.is_step or loop.is_eval or loop.is_epoch:
                return loop.is_step and loop.reads_clock
        function = where.function
        if function is None or function.heat_site is None or id(function) in seen:
            return False
        seen.add(id(function))
        where = function.heat_site.where


def _brackets_a_measurement(where: Where) -> bool:
    """A timed sync in a loop that is not itself a step, around an inner loop: it brackets the
    measured loop (correct benchmarking), once per measurement."""
    loop = where.innermost_loop
    return loop is not None and loop.has_nested_loop and not loop.is_step


def _names_a_flag(branch: str) -> bool:
    """The test a trace step shows (`args.sync_each_step`, or `not (...)` for its `else`) is an
    opt-in flag, as the walk's own `is_opt_in_flag` reads one."""
    try:
        test = cst.parse_expression(branch)
    except cst.ParserSyntaxError:
        return False  # a test shortened for the trace ("...") is not known
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    return is_opt_in_flag(test)
