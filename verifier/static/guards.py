"""Rate-limit guards: code under `if step % log_every == 0:` runs every N steps, not every step.

A guard is an enclosing `if` (in the same function) whose test takes a modulo, compares a
step/batch index for equality (`if i == 0`, `if batch_idx == len(loader) - 1`), keeps to the
first N (`if num_printed < 10`), counts the steps since the last time against an interval
(`if step - last_eval < every:`), reads a clock, or names a logging decision (`if should_log:`,
`if step_is_print_step`). The `else` branch of a guard is not guarded. `if step % N: continue`
(also `if step != at: continue`, which runs the rest on that step only)
guards the rest of its loop body, and `if step - last < every: return` (or `if step != at:
return`) at a function's own level the rest of the function. An `if` whose body steps an optimizer is the update cadence
of gradient accumulation (`if (i + 1) % accum == 0: optimizer.step()`), not a rate limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from verifier.static.heat import is_optimizer_name, is_scaler_name
from verifier.static.lambda_scopes import LambdaScopes
from verifier.static.names import ImportTable, dotted_name, terminal_name
from verifier.static.statement_bindings import statement_bindings
from verifier.static.suites import MarkedSuites, SuiteVisits
from verifier.static.rule import Rule
from verifier.static.tracker import Tracker
from verifier.static.walk import children, ends_with, iter_descendants

def _is_literal_one(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Integer and node.evaluated_value == 1


# `should_log`, `log_interval`, `print_freq`; not `logger` (a null check is no rate limit). A
# trainer's interval flags (`self.control.should_save`, `should_evaluate`) are the same decision.
_LOGGING_DECISION = re.compile(
    r"every|interval|freq|period|should_log|should_save|should_eval|log_now|do_log|is_log|log_step|print_step|display",
    re.IGNORECASE,
)
_INDEX = re.compile(r"^(i|j|k|n|it|idx)$|step|iter|batch|idx|count", re.IGNORECASE)
_LOADER = re.compile(r"loader", re.IGNORECASE)
_LAST_TIME = re.compile(r"last|prev|start|begin", re.IGNORECASE)
_COUNTER = re.compile(r"^(i|j|k|n|it|idx)$|step|iter|batch|idx|count|^num_|^n_|total|printed|shown|seen", re.IGNORECASE)


def is_rate_limit(
    test: cst.BaseExpression, imports: ImportTable, is_one: Callable[[cst.BaseExpression], bool] = _is_literal_one,
) -> bool:
    """`is_one`: whether an interval is 1 as the code runs by default (`% args.log_steps` with
    `default=1`): taken modulo 1, the test holds every step, which is no rate limit."""
    every_step = [
        node for node in (test, *iter_descendants(test))
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo and is_one(node.right)
    ]
    skipped = {id(part) for node in every_step for part in (node, *iter_descendants(node))}
    for node in (test, *iter_descendants(test)):
        if id(node) in skipped:
            continue  # `(i + 1) % args.log_steps` with `default=1`: its names are no rate limit either
        kind = type(node)
        if kind is cst.BinaryOperation and type(node.operator) is cst.Modulo and not _measures_a_size(node.left):
            return True
        if kind is cst.Comparison and (_compares_index_for_equality(node) or _first_few(node) or _since_last(node)):
            return True
        if (kind is cst.Name or kind is cst.Attribute) and _LOGGING_DECISION.search(terminal_name(node) or ""):
            return True
        if kind is cst.Call and (imports.call_name(node) or "").startswith("time."):
            return True
    return False


def training_mode_test(test: cst.BaseExpression) -> bool | None:
    """True for a test that holds in training mode (`self.training`), False for one that holds in
    evaluation mode (`not self.training`, `self.training is False`), None for any other test."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = training_mode_test(test.expression)
        return None if inner is None else not inner
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if type(target.operator) in (cst.Is, cst.Equal) and type(target.comparator) is cst.Name:
            truth = {"True": True, "False": False}.get(target.comparator.value)
            inner = training_mode_test(test.left)
            return None if inner is None or truth is None else inner is truth
        return None
    if type(test) is cst.Attribute and test.attr.value == "training" and type(test.value) is cst.Name:
        return test.value.value == "self" or None
    return None


_COMPILING_PROBES = frozenset({"torch.compiler.is_compiling", "torch._dynamo.is_compiling", "torch.compiler.is_dynamo_compiling"})


def _outside_compiled_code(test: cst.BaseExpression, imports: ImportTable) -> bool:
    """`not torch.compiler.is_compiling()`: the body runs in eager code only; under
    `torch.compile` the traced graph leaves it out."""
    return (
        type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and type(test.expression) is cst.Call
        and (imports.call_name(test.expression) or "") in _COMPILING_PROBES
    )


def _measures_a_size(node: cst.BaseExpression) -> bool:
    """`X.size(0) % world`, `len(batch) % n`, `x.shape[0] % 8`: a divisibility check on data, not
    a step counter taken modulo an interval."""
    for part in (node, *iter_descendants(node)):
        if type(part) is cst.Call and (
            dotted_name(part.func) == "len" or (type(part.func) is cst.Attribute and part.func.attr.value in ("size", "numel"))
        ):
            return True
        if type(part) is cst.Attribute and part.attr.value == "shape":
            return True
    return False


def is_lazy_init(node: cst.If) -> bool:
    """`if self._weights is None or ...: self._weights = ...`: the body fills a cache the test
    checks, so it runs once (or again only when the condition changes), not every time."""
    checked = {
        dotted_name(n.left) for n in (node.test, *iter_descendants(node.test))
        if type(n) is cst.Comparison and any(type(c.operator) is cst.Is and type(c.comparator) is cst.Name
                                             and c.comparator.value == "None" for c in n.comparisons)
    }
    checked.discard(None)
    if not checked:
        return False
    return any(
        type(n) is cst.AssignTarget and dotted_name(n.target) in checked for n in iter_descendants(node.body)
    )


def guarded_calls(node: cst.If, imports: ImportTable) -> frozenset[int]:
    """Ids of the calls that run only when a rate-limit `if` holds (its body, not its `else`)."""
    if not is_rate_limit(node.test, imports):
        return frozenset()
    return frozenset(id(n) for n in iter_descendants(node.body) if type(n) is cst.Call)


def _compares_index_for_equality(node: cst.Comparison) -> bool:
    if not any(type(c.operator) is cst.Equal for c in node.comparisons):
        return False
    sides = [node.left, *(c.comparator for c in node.comparisons)]
    return any(_INDEX.search(dotted_name(side) or "") or _reads_a_counter(side) for side in sides)


def _reads_a_counter(node: cst.BaseExpression) -> bool:
    """`self.get_num_updates()`, `trainer.get_global_step()`: a counter read through its getter."""
    if type(node) is not cst.Call or node.args:
        return False
    name = terminal_name(node.func) or ""
    return name.startswith("get_") and bool(_COUNTER.search(name[len("get_"):]))


def _since_last(node: cst.Comparison) -> bool:
    """`if step - last_eval_step < EVAL_INTERVAL: return` / `if it - last_log >= every:`: the steps
    since the last time against an interval, a rate limit kept by hand; also written as a sum
    (`if cur_nimg < tick_start_nimg + kimg_per_tick * 1000: continue`)."""
    if len(node.comparisons) != 1:
        return False
    comparison = node.comparisons[0]
    if type(comparison.operator) not in (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual):
        return False
    if _last_time_plus_interval(node.left, comparison.comparator):
        return True
    left = node.left
    if type(left) is not cst.BinaryOperation or type(left.operator) is not cst.Subtract:
        return False
    names = [dotted_name(left.left), dotted_name(left.right)]
    return (
        all(names) and any(_COUNTER.search(name) for name in names)
        and type(comparison.comparator) in (cst.Name, cst.Attribute, cst.Integer)
    )


def _last_time_plus_interval(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    """`cur_nimg < tick_start_nimg + interval`: a counter against when the last period started
    plus its length (a name saying so: last, prev, start, begin)."""
    if dotted_name(left) is None or type(right) is not cst.BinaryOperation or type(right.operator) is not cst.Add:
        return False
    return any(
        type(part) in (cst.Name, cst.Attribute) and _LAST_TIME.search(terminal_name(part) or "")
        for part in (right.left, right.right)
    )


def _first_few(node: cst.Comparison) -> bool:
    """`if shown < 10:` / `if step <= 3:` / `if 0 <= step <= 2:`: a counter kept below a literal bound."""
    if len(node.comparisons) != 1:
        # A chain: some link keeps a counter below a literal (`0 <= step <= 2`).
        sides = [node.left, *(c.comparator for c in node.comparisons)]
        return any(
            _COUNTER.search(dotted_name(left) or "")
            and type(c.operator) in (cst.LessThan, cst.LessThanEqual)
            and type(c.comparator) is cst.Integer
            for left, c in zip(sides, node.comparisons)
        )
    comparison = node.comparisons[0]
    if not _COUNTER.search(dotted_name(node.left) or ""):
        return False
    if type(comparison.operator) in (cst.LessThan, cst.LessThanEqual):
        return type(comparison.comparator) is cst.Integer
    # `if step > num_iterations - 20:`: the last N.
    bound = comparison.comparator
    return (
        type(comparison.operator) in (cst.GreaterThan, cst.GreaterThanEqual)
        and type(bound) is cst.BinaryOperation
        and type(bound.operator) is cst.Subtract
        and type(bound.right) is cst.Integer
    )


_CONFIG_OBJECTS = frozenset({"args", "opt", "opts", "cfg", "config", "conf", "flags", "hparams", "options", "settings"})


def is_opt_in_flag(test: cst.BaseExpression) -> bool:
    """`if args.synchronize_step:` / `if self.cfg.debug:`: a command-line or config switch."""
    if type(test) is not cst.Attribute:
        return False
    owner = dotted_name(test.value) or ""
    return owner.rsplit(".", 1)[-1] in _CONFIG_OBJECTS


def steps_an_optimizer(body: cst.CSTNode) -> bool:
    """Whether `body` calls `optimizer.step()` / `scaler.step(opt)` (the update itself)."""
    for node in iter_descendants(body):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "step":
            owner = terminal_name(node.func.value)
            if is_optimizer_name(owner) or is_scaler_name(owner):
                return True
    return False


def _skips_unless_index(test: cst.BaseExpression) -> bool:
    """`if step != apply_step: continue` (also one term of an `or`): the rest of the iteration
    runs only on the step the index names."""
    terms, pending = [], [test]
    while pending:
        term = pending.pop()
        if type(term) is cst.BooleanOperation and type(term.operator) is cst.Or:
            pending += [term.left, term.right]
        else:
            terms.append(term)
    return any(
        type(term) is cst.Comparison and len(term.comparisons) == 1
        and type(term.comparisons[0].operator) is cst.NotEqual
        and any(_INDEX.search(dotted_name(side) or "") for side in (term.left, term.comparisons[0].comparator))
        for term in terms
    )


def _returns(body: cst.BaseSuite) -> bool:
    """The branch ends with a `return` (the early exit of a rate-limited helper)."""
    return ends_with(body, (cst.Return,))


def _leaves_iteration(body: cst.BaseSuite) -> bool:
    return ends_with(body, (cst.Continue,))


_UNDECIDED = object()


@dataclass(eq=False)
class _Frame:
    # The function (or module) walked: what its names are bound to decides `if flag:`.
    scope: cst.CSTNode | None = None
    # The `if`s whose body the walk is in; whether each is a guard is asked only when needed.
    open_ifs: list[cst.If] = field(default_factory=list)
    loops: list[bool] = field(default_factory=list)
    # Per loop: the names it binds (`for i, fold in ...` -> {"i", "fold"}; a `while` binds none)
    # and whether it iterates a data loader (`for step, batch in enumerate(test_dataloader)`).
    heads: list[tuple[frozenset[str], bool]] = field(default_factory=list)
    # Entry i, once asked: whether any of open_ifs[:i + 1] is a guard (the outer ones are not
    # asked again for each call in an inner body).
    guarded_ifs: list[bool] = field(default_factory=list)
    # After `if step - last < every: return` at the function's own level: the rest of the
    # function runs only when the rate limit lets it through.
    rest_guarded: bool = False
    # How many open blocks run in evaluation mode only (the `else` of `if self.training:`).
    in_eval_mode: int = 0


class Guards(SuiteVisits, LambdaScopes, Tracker):
    """Whether the node being visited runs only every N steps: inside the body of a rate-limit
    `if` of the same function, or after `if step % N: continue` in its loop. The test of the
    `if` itself, and its `else`, run every time."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._frames: list[_Frame] = [_Frame(context.module)]
        self._if_of_body: dict[int, cst.If] = {}
        self._eval_mode_bodies = MarkedSuites()
        self._verdicts: dict[int, str | None] = {}
        # The answer for the current frame, asked at every call: kept until a function, loop
        # or guarded body opens or closes (each `if`'s verdict never changes once known).
        self._answer: bool | None = None

    @property
    def guarded(self) -> bool:
        answer = self._answer
        if answer is None:
            frame = self._frames[-1]
            answer = self._answer = (
                frame.rest_guarded or bool(frame.in_eval_mode) or any(frame.loops) or self._in_guarded_if(frame)
            )
        return answer

    def _in_guarded_if(self, frame: _Frame) -> bool:
        """`any(self._is_guard(node) for node in frame.open_ifs)`, resuming where the last ask
        stopped: the same verdicts are asked, in the same order, each only once."""
        known, ifs = frame.guarded_ifs, frame.open_ifs
        answer = known[-1] if known else False
        for node in ifs[len(known):]:
            answer = answer or self._is_guard(node)
            known.append(answer)
        return answer

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.append(_Frame(node))
        self._answer = None

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()
        self._answer = None

    def visit_For(self, node: cst.For) -> None:
        targets = frozenset(n.value for n in (node.target, *iter_descendants(node.target)) if type(n) is cst.Name)
        over_loader = any(
            type(n) in (cst.Name, cst.Attribute) and _LOADER.search(terminal_name(n) or "")
            for n in (node.iter, *iter_descendants(node.iter))
        )
        self._enter_loop((targets, over_loader))

    def visit_While(self, node: cst.While) -> None:
        self._enter_loop((frozenset(), False))

    def leave_For(self, node: cst.For) -> None:
        self._leave_loop()

    def leave_While(self, node: cst.While) -> None:
        self._leave_loop()

    def _enter_loop(self, head: tuple[frozenset[str], bool]) -> None:
        self._frames[-1].loops.append(False)
        self._frames[-1].heads.append(head)
        self._answer = None

    def _leave_loop(self) -> None:
        self._frames[-1].loops.pop()
        self._frames[-1].heads.pop()
        self._answer = None

    def visit_If(self, node: cst.If) -> None:
        self._if_of_body[id(node.body)] = node
        if type(node.orelse) is cst.Else and training_mode_test(node.test) is True:
            self._eval_mode_bodies.mark(node.orelse.body)

    def leave_If(self, node: cst.If) -> None:
        del self._if_of_body[id(node.body)]
        frame = self._frames[-1]
        if frame.loops and node.orelse is None and _leaves_iteration(node.body) and self._limits_the_rest(node):
            frame.loops[-1] = True
        elif (
            not frame.loops and not frame.open_ifs and type(frame.scope) is cst.FunctionDef
            and node.orelse is None and _returns(node.body)
            and (self._limits_the_rest(node) or training_mode_test(node.test) is True)
        ):
            frame.rest_guarded = True
            self._answer = None
            self._answer = None

    def open_suite(self, body: cst.BaseSuite) -> None:
        owner = self._if_of_body.get(id(body))
        if owner is not None:
            self._frames[-1].open_ifs.append(owner)
            self._answer = None
        elif self._eval_mode_bodies.enter(body):
            self._frames[-1].in_eval_mode += 1
            self._answer = None

    def close_suite(self, body: cst.BaseSuite) -> None:
        if self._eval_mode_bodies.leave(body):
            self._frames[-1].in_eval_mode -= 1
            self._answer = None
        if id(body) in self._if_of_body:
            frame = self._frames[-1]
            frame.open_ifs.pop()
            del frame.guarded_ifs[len(frame.open_ifs):]
            self._answer = None

    def _limits_the_rest(self, node: cst.If) -> bool:
        """`if step % N: continue` / `... return` run the rest only on some steps; `if not
        self.training: return preds` leaves the training-mode code to run every step."""
        return self.guard_kind(node) in ("rate", "lazy", "eager") or _skips_unless_index(node.test)

    def _is_guard(self, node: cst.If) -> bool:
        return self.guard_kind(node) in ("rate", "lazy", "eager", "eval")

    def _is_one(self, interval: cst.BaseExpression) -> bool:
        """An interval of 1 as written, as the options hold it by default (`default=1`), or as a
        script's module-level setting holds it (`log_interval = 1` at the top of a training
        script, which a config file or the command line may override: the default run logs
        every step)."""
        if _is_literal_one(interval):
            return True
        if type(interval) is cst.Name and self._module_setting_is_one(interval.value):
            return True
        command_line = self.context.command_line()
        return command_line is not None and command_line.is_by_default(interval, 1)

    def holds_every_step(self, test: cst.BaseExpression) -> bool:
        """`if iter_num % log_interval == 0:` with an interval of 1 by default (`_is_one`): taken
        modulo 1, the test holds on every iteration, as if there were no test."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return False
        target = test.comparisons[0]
        if type(target.operator) is not cst.Equal:
            return False
        sides = (test.left, target.comparator)
        zero = [side for side in sides if type(side) is cst.Integer and side.evaluated_value == 0]
        modulo = [side for side in sides if type(side) is cst.BinaryOperation and type(side.operator) is cst.Modulo]
        return bool(zero) and bool(modulo) and self._is_one(modulo[0].right)

    def _module_setting_is_one(self, name: str) -> bool:
        """Bound once in the module, at its top level, to the literal 1, and not in this function."""
        scope = self._frames[-1].scope
        if scope is not None and scope is not self.context.module and name in statement_bindings(self.context, scope):
            return False
        bound = statement_bindings(self.context, self.context.module).get(name, ())
        return len(bound) == 1 and not bound[0][1] and bound[0][0] is not None and _is_literal_one(bound[0][0])

    def guard_kind(self, node: cst.If) -> str | None:
        """What `node`'s test says, decided once per `if` for every tracker that asks
        (`conditions.py` asks too): "rate" (a rate limit: a guard), "cadence" (a rate-limit test
        whose body steps the optimizer: the update cadence of gradient accumulation, no guard),
        "lazy" (a cache fill: a guard), "eager" (`if not torch.compiler.is_compiling():`, debug code
        a compiled graph leaves out: a guard), "eval" (`if not self.training:`, a module's
        evaluation-mode branch: a guard), else None."""
        found = self._verdicts.get(id(node), _UNDECIDED)
        if found is _UNDECIDED:
            if _outside_compiled_code(node.test, self.context.imports):
                found = "eager"
            elif training_mode_test(node.test) is False:
                found = "eval"
            elif (
                is_rate_limit(node.test, self.context.imports, self._is_one) or self._names_a_rate_limit(node.test)
            ) and not self._counts_outer_loops_only(node.test):
                found = "cadence" if steps_an_optimizer(node.body) else "rate"
            else:
                found = "lazy" if is_lazy_init(node) else None
            self._verdicts[id(node)] = found
        return found


    def _counts_outer_loops_only(self, test: cst.BaseExpression) -> bool:
        """`if i == 0:` inside `for i, fold in ...: for step, batch in enumerate(test_loader):`: the
        counters the test reads are bound by loops around the innermost one, a loop over a data
        loader, so within it the test holds on every batch or on none: no rate limit of it. (Over
        the micro-batches or chunks of one step, the outer index is the step's own counter.)"""
        heads = self._frames[-1].heads
        if len(heads) < 2 or not heads[-1][1]:
            return False
        counters = {
            n.value for n in (test, *iter_descendants(test)) if type(n) is cst.Name and _COUNTER.search(n.value)
        }
        outer = frozenset().union(*(targets for targets, _ in heads[:-1]))
        return bool(counters) and counters <= outer and not counters & heads[-1][0]

    def _names_a_rate_limit(self, test: cst.BaseExpression) -> bool:
        """`if is_metric_step:` where the function binds `is_metric_step = i % every == 0 or
        last`: a flag is the rate limit it was bound to (every binding one, or False/None)."""
        scope = self._frames[-1].scope
        if scope is None:
            return False
        bound = statement_bindings(self.context, scope)
        pending = [test]
        while pending:
            part = pending.pop()
            if type(part) in (cst.BooleanOperation, cst.UnaryOperation):
                pending.extend(children(part))
            elif type(part) is cst.Name and self._flag_is_rate_limit(part.value, bound, {part.value}):
                return True
        return False

    def _flag_is_rate_limit(self, name: str, bound, seen: set[str]) -> bool:
        values = [value for value, _ in bound.get(name, ())]
        if not values or any(value is None for value in values):
            return False
        for value in values:
            if _never_true(value) or is_rate_limit(value, self.context.imports):
                continue
            # `log_now = is_metric_step`: the flag it copies.
            if type(value) is cst.Name and value.value not in seen:
                seen.add(value.value)
                if self._flag_is_rate_limit(value.value, bound, seen):
                    continue
            return False
        return not all(_never_true(value) for value in values)


def _never_true(value: cst.BaseExpression) -> bool:
    """`flag = False` / `flag = None` before the loop sets it: never a reason to run the body."""
    return type(value) is cst.Name and value.value in ("False", "None")


class GuardedRule(Rule):
    """A rule that stays quiet under rate-limit guards: `self.guarded` says whether the node
    being visited runs only every N steps. It cooperates with other bases
    (`class Rule104(GuardedRule, HostDataRule)`), so no rule keeps its own guard tracker."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self._guards = context.tracker(Guards)

    @property
    def guarded(self) -> bool:
        return self._guards.guarded
