"""The hot-path model: how often each statement runs (once, per epoch, per step).

Built during the engine's single walk: it records functions, loops, call sites and training
signals as they are met, then `resolve()` classifies loops and propagates heat through calls.
Rules never re-derive loop structure; they capture `where()` and ask `heat_of(where)` later.

Heat rests on training structure, not on names. A *step* is one optimizer update. A loop is a
*step* loop when its own body steps an optimizer (`optimizer.step()`, `scaler.step(opt)`): under
gradient accumulation that is the loop around the micro-batch loop, and the micro-batch loop
inside it (which calls `.backward()`) is a step loop too, never an "epoch". A loop whose body,
directly or through called functions, trains (`.backward()`, an optimizer or scaler step,
`zero_grad()`) without containing another step loop is a step loop as well. In a benchmark
(a function or module named for timing) the innermost loop doing tensor work is a step loop.

A loop that runs the model or iterates a data source without training is an *eval* loop
(evaluation, validation, generation): its own, milder heat, and it never demotes the training
loop around it (a periodic inline eval loop is not a step loop inside an epoch). A loop that
contains a step loop is an *epoch* loop, and so is full-batch training: a loop over no data
source that updates once and evaluates every iteration (`for epoch in range(n): train(); test()`)
takes one step per epoch. A loop that calls an evaluation with its own loop over batches (one
validation set per iteration) is not an evaluation loop itself. A loop in a module's `forward`
(over its layers), or over a counter in another method of a model, is part of one call, never an
evaluation loop. Other loops take the heat of what encloses them. A
`for` header's iterable is evaluated once, before the loop. A function is as hot as its
hottest call site; calls resolve by plain name, `self.method`, `self(x)` (the module's
`forward`), instances constructed in the
module, imports, `getattr(obj, "name")`, and a `with` statement's `__enter__`/`__exit__`; calls
through a receiver (`self.sampler.sample()`, a parameter, an alias, a partial, a callback handed in
or kept in a list) and inherited methods are bound by the project pass (`bindings.py`). Branches
on the way say how surely a line runs as often as its heat (`conditions.py`, `proofs.py`).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import re
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace

import libcst as cst

from verifier.findings import Heat, TraceStep
from verifier.static.amp import is_backward
from verifier.static.caller_branches import LITERAL_NAMES
from verifier.static.deferred import EVERY_INPUT, JudgementInput
from verifier.static.framework_hooks import hook_reason, hooks_of_class, ignite_handler_heat
from verifier.static.pytest_files import is_test_path
from verifier.static.names import (
    ImportTable,
    code_of,
    dotted_name,
    iterated_source,
    keyword_arg,
    literal_string,
    method_name,
    positional_arg,
    receiver,
    terminal_name,
)
from verifier.static.torch_api import returns_tensor
from verifier.static.trace_lines import SourceLines
from verifier.static.walk import iter_descendants

_MODEL_NAMES = frozenset(
    {"model", "net", "network", "module", "encoder", "decoder", "backbone", "policy",
     "generator", "discriminator", "critic", "actor", "forward"}
)
_DATA_SOURCE = re.compile(r"loader|batches|batch_iter|data_iter", re.IGNORECASE)
_STEP_COUNT = re.compile(r"step|iter|batch", re.IGNORECASE)
_TIMING_FUNCTION = re.compile(r"bench|timing|timeit|profil|measure|latency|throughput", re.IGNORECASE)
# A module named for benchmarking (bench.py, benchmark_attention.py, infer_bench.py).
_TIMING_MODULE = re.compile(r"(^|_)bench(mark)?(s|ing)?($|_)|profil", re.IGNORECASE)
_MEMOISERS = frozenset({"functools.cache", "functools.lru_cache", "functools.cached_property"})
_UPDATES = frozenset({"backward", "zero_grad", "step"})
# Host clocks (and CUDA events) a loop reads to time itself.
CLOCKS = frozenset(
    {"time.perf_counter", "time.perf_counter_ns", "time.time", "time.time_ns", "time.monotonic",
     "time.monotonic_ns", "timeit.default_timer", "torch.cuda.Event"}
)


def reads_clock(call: cst.Call, qualified: str | None) -> bool:
    """A host clock, or a CUDA event made to time (`enable_timing=True`); an event made only to
    wait on (`torch.cuda.Event().synchronize`) times nothing."""
    if qualified not in CLOCKS:
        return False
    if qualified != "torch.cuda.Event":
        return True
    return any(
        arg.keyword is not None and arg.keyword.value == "enable_timing"
        and not (type(arg.value) is cst.Name and arg.value.value == "False")
        for arg in call.args
    )


# A verb before the noun names an action on a model (`profile_model(m)`, `train_model(...)`), not one.
_NOT_A_MODEL = re.compile(
    r"^(is|has|get|set|make|build|create|load|init|to|from|save|register|wrap|profile|benchmark|bench|measure|"
    r"train|evaluate|eval|test|validate|run|export|convert|prepare|setup|compile|print|log|count|check|"
    r"update|apply|fuse|quantize|prune|freeze|unwrap|copy|clone|summarize|describe|rewrite|replace|patch|"
    r"shard|parallelize|distribute|materialize|reset|restore|move|cast|attach|instrument|trace|script|"
    r"turn|enable|disable|switch|add|remove|insert)_"
)
# `turn_on_efficient_conv_bn_eval_for_single_model`, `hooks_for_model`: a phrase about a model.
_ABOUT_A_MODEL = re.compile(r"_(for|to|of|on|in|into|from|with)_(\w+_)?(model|net)$")


@functools.lru_cache(maxsize=4096)
def is_model_name(name: str | None) -> bool:
    """`model`, `self.net`, `ddp_model`: names that read as a module whose call is a forward."""
    if not name:
        return False
    lowered = name.lower()
    # `_rewrite_model(model)`: a private helper that acts on a model is a verb all the same.
    if _NOT_A_MODEL.match(lowered.lstrip("_")) or _ABOUT_A_MODEL.search(lowered):
        return False
    return lowered in _MODEL_NAMES or lowered.endswith(("model", "_net"))


def is_optimizer_name(name: str | None) -> bool:
    return bool(name) and ("optim" in name.lower() or name.lower() in {"opt", "opt_g", "opt_d"})


# `scaler`, `grad_scaler`, `self.loss_scaler`, `scaler_d`; not `scaler_meter` (a meter of it).
_SCALER_NAME = re.compile(r"scaler(_?[a-z0-9])?$")


def is_scaler_name(name: str | None) -> bool:
    return bool(name) and _SCALER_NAME.search(name.lower()) is not None


# A tensor whose place the project pass does not know (`bindings.TENSOR`).
_TENSOR_FACT = ("tensor",)


class ConditionKind(enum.Enum):
    """What an enclosing branch says about how often its code runs (`conditions.py` decides).

    Ordered from no effect to the weakest claim: the weakest kind on a finding's path decides
    whether its frequency premise is proven, assumed or unknown.
    """

    # Run-constant configuration (`if args.amp:`, `if scaler is not None:`): the heat holds, named.
    CONSTANT = 0
    # The update cadence of gradient accumulation (`if (i + 1) % accum == 0: optimizer.step()`).
    CADENCE = 1
    # The rest of a step after a data-dependent early exit (`if bad_batch: continue`): the main
    # path, skipped only when the exit is taken.
    EXIT = 2
    # A rate limit (`if step % log_every == 0:`): every N steps, not every step.
    THROTTLE = 3
    # Configuration the defaults leave off (`if args.clip > 0:` with `default=-1.0`, a
    # constructor's switch nothing sets): runs only in the runs that opt in, so how often the
    # default run takes it is not known at all (weaker than a rate limit's "every N steps").
    OPT_IN = 4
    # A module's evaluation-mode branch (`if not self.training:`, the `else` of `if
    # self.training:`): a training step runs the model in training mode, so not every step.
    EVAL_MODE = 5
    # Runs once or a few times (`if cache is None:` fills, first-N).
    ONCE = 6
    # Depends on the data or on state the step changes (`if loss > 10:`, `except ...:`).
    DATA = 7


_TEST_TEXT_LIMIT = 60


@dataclass(frozen=True, eq=False)
class Condition:
    """The branch a line runs under: its kind and its test (`not should_log(step)` for the code
    after `if should_log(step): ...` leaves, or an `else`)."""

    kind: ConditionKind
    # The test, for the text and the line of the evidence; None once the tree is released.
    node: cst.CSTNode | None = None
    negated: bool = False
    # The text, when there is no test to print (`an exception is raised`) or it was released.
    described: str = ""

    @functools.cached_property
    def text(self) -> str:
        """The test as written, shortened; printed only when a finding or a trace needs it."""
        if self.described or self.node is None:
            return self.described
        test = " ".join(code_of(self.node).split())
        if len(test) > _TEST_TEXT_LIMIT:
            test = test[: _TEST_TEXT_LIMIT - 3] + "..."
        if not self.negated:
            return test
        return test[4:] if test.startswith("not ") else f"not ({test})"

    def released(self) -> Condition:
        """The same condition without its syntax node (a stored summary keeps only data)."""
        return Condition(self.kind, described=self.text)


# Prints a node outside its module (an expression needs nothing of the module's settings).


@dataclass(eq=False)
class CallSite:
    callee: str
    where: Where
    # Under a rate-limit or eval-interval guard (`if step % eval_every == 0: evaluate()`).
    guarded: bool = False
    # Made in a module that names an accelerator; calling a function of another module.
    accelerated: bool = True
    foreign: bool = False
    # 1-based; 0 until the module's positions are computed (`HeatModel.number_lines`).
    line: int = 0
    # What the call passes, as binding terms (`bindings.py`): (position or keyword, term) for
    # the arguments whose term is known; `starred` when `*args`/`**kwargs` hide the rest.
    args: tuple = ()
    starred: bool = False
    # Every argument's slot (position or keyword), known term or not: a parameter no slot names
    # is left at its default (`FunctionInfo.literal_defaults`).
    passed: tuple = ()
    # The arguments (position or keyword) that are names the caller read into Python just before
    # (`host_reads.py`): `lossf = loss.item()`, then `log_step(loss)`.
    read_args: tuple = ()
    # `self.sampler.sample()`, `criterion(x)`: the receiver's term and the method, resolved to a
    # callee by the project pass once the receiver's class is known.
    via: tuple | None = None
    # Called through an instance (`self.m()`, `obj.m()`): a method's first parameter is bound.
    through_instance: bool = False
    # The name the caller calls when the callee is its `__call__`/`forward` (`loss_scaler`).
    shown: str = ""
    # The branch the call runs under within its function (`conditions.py`), None when none.
    condition: Condition | None = None
    # Made with autograd off (under `torch.no_grad()`, `inference_mode()`, or in a function
    # decorated with one): the callee runs without recording a graph there.
    grad_off: bool = False


@dataclass(eq=False)
class LoopInfo:
    node: cst.CSTNode
    parent: LoopInfo | None
    data_source: bool = False
    trains: bool = False
    # An optimizer or scaler step whose innermost loop is this one: the update cadence.
    steps_here: bool = False
    forward: bool = False
    # `while batch_size: try: ...; return except OutOfMemoryError: batch_size //= 2`: runs until
    # one attempt succeeds; its iterations are retries, not steps.
    retry: bool = False
    # `for b in range(preds.shape[0]):`: over the rows of a tensor the call already holds (the
    # images of one batch in a loss's target assignment), not over batches.
    over_rows: bool = False
    # `for opt, sched in zip(optimizers, schedulers): opt.step()`: a loop over the optimizers of
    # one update, not over batches; the update's cadence is the loop around it.
    over_optimizers: bool = False
    # Iterates settings listed in the code (`for hook, wrapper in [(NO, NO), (FP16, NO), ...]`):
    # as many iterations as the list has, each a run of its own when a callee trains.
    over_listed: bool = False
    # The names a `for` target binds (empty for `while`).
    targets: frozenset[str] = frozenset()
    # The first host read of a value known to be a tensor in its iteration (its own body or a
    # loop nested in it), by its code: each iteration already waits for the device there.
    reads: str = ""
    tensor_work: bool = False
    has_nested_loop: bool = False
    calls: list[CallSite] = field(default_factory=list)
    nested: list[LoopInfo] = field(default_factory=list)
    is_step: bool = False
    is_epoch: bool = False
    is_eval: bool = False
    rollout: bool = False
    # For the heat trace: where the loop is, what its header says (`iterates train_loader`,
    # `while True`), the first update / training / forward call seen in it, and what decided
    # its kind when that lies elsewhere (a nested step loop, a call to a training function).
    path: str = ""
    line: int = 0
    header: str = ""
    update_call: str = ""
    # `obs, reward, done, info = envs.step(action)` in this loop's own body (`is_environment_step`).
    environment_step: str = ""
    train_call: str = ""
    forward_call: str = ""
    because_loop: LoopInfo | None = None
    because_site: CallSite | None = None
    # The update is in a function this loop calls once per iteration (`because_site`).
    steps_in_call: bool = False
    # Its body reads a host clock (`t0 = time.perf_counter()`): the loop times its steps.
    reads_clock: bool = False
    # Its own body runs a backward in full precision (`amp.is_backward`, in a module that never
    # chooses a precision), directly or, once resolved, through a call (`fp32_backward_call`).
    fp32_backward: bool = False
    fp32_backward_call: bool = False
    # It updates once and evaluates every iteration over no data source: full-batch training,
    # one step per epoch (an epoch loop).
    full_batch: bool = False
    # In a module's `forward` (`for layer in self.layers: x = layer(x)`): its iterations are
    # parts of one forward, never evaluation batches; it runs as often as the forward.
    in_forward: bool = False
    # Directly in a method of a class, the key its `forward` would have: in a model's other
    # methods (a loss, a propagation helper) a loop of tensor work is part of one call too.
    sibling_forward: str = ""


@dataclass(eq=False)
class FunctionInfo:
    key: str
    # A `def`, or a lambda bound to a name (`log = lambda t: ...`), which runs where it is called.
    node: cst.FunctionDef | cst.Lambda
    params: frozenset[str]
    timing: bool = False
    trains: bool = False
    updates: bool = False
    # Steps an optimizer outside its own loops (`def run_step(): ...; opt.step()`), directly
    # or through calls: a loop that calls it once per iteration runs one update per iteration.
    steps: bool = False
    # Runs a backward pass in its own body (`loss.backward()`, `accelerator.backward(loss)`).
    backward: bool = False
    forward: bool = False
    # Puts a model in eval mode (`model.eval()`) or runs it without gradients: an evaluation.
    evaluates: bool = False
    memoised: bool = False
    # Its module names an accelerator, or a caller's does: its tensors may live on the device.
    accelerated: bool = True
    loops: list[LoopInfo] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    trains_transitively: bool = False
    steps_transitively: bool = False
    # Runs a backward pass outside its own loops, directly or through calls (`backward_pass(loss)`).
    backward_transitively: bool = False
    # A backward in full precision outside its own loops (see `LoopInfo.fp32_backward`), itself
    # or through the functions it calls there.
    fp32_backward: bool = False
    fp32_backward_transitively: bool = False
    # Reads a host clock outside its own loops (a timer's `tic()`/`toc()`): a loop that calls it
    # reads the clock as if the read were in its own body (`LoopInfo.reads_clock`).
    reads_clock: bool = False
    forwards_transitively: bool = False
    has_step_loop: bool = False
    heat: Heat = Heat.ONCE
    path: str = ""
    # The call site that first gave the function its heat, or the chain another pass found.
    heat_site: CallSite | None = None
    outer_trace: tuple[TraceStep, ...] = ()
    # A framework hook: who calls it and how often (`Lightning calls training_step() every
    # step`), the last step of its trace while no call site or other pass made it hotter.
    hook: str = ""
    # The `def` line, for the hook's trace step (0 until numbered).
    line: int = 0
    # The hook is inferred, not a framework's contract: a training step no analysed code calls.
    hook_inferred: bool = False
    # Positional parameter names in order, and whether `self` (or `cls`) comes first.
    order: tuple = ()
    method: bool = False
    # Binding terms of what it returns and yields (`bindings.py`), in walk order.
    results: list = field(default_factory=list)
    yields: list = field(default_factory=list)
    # Facts every visible call site agrees on, per parameter: ((name, fact), ...).
    bound: tuple = ()
    # What every `return` gives, across the project (a tensor, one on the accelerator, a
    # number; `bindings.py`), else None.
    returns: tuple | None = None
    # What its own calls of project functions return where it makes them, when the function's
    # `returns` cannot say (`iou(gt, anchors)` of host boxes here, of device boxes elsewhere):
    # (callee key, fact) pairs (`bindings.py`).
    returned_at: tuple = ()
    # The functions the project pass found its calls through a receiver run (`step_fn(batch)`
    # with `step_fn=self.train_step` at every call site): ((receiver term, method), key) pairs,
    # so that its file's re-analysis calls the same functions (`bindings.py`).
    routes: tuple = ()
    # Every call site the whole project shows runs under an opt-in setting (`if args.gail:
    # discr.update(...)`), directly or in a caller that is itself opt-in only: the site it names,
    # or, from another pass, its trace step. Its own loops are hot only in a configuration the
    # user has to choose.
    opt_in_site: CallSite | None = None
    opt_in_trace: tuple[TraceStep, ...] = ()
    # Some call of it the project shows runs with autograd off, at the call or further out (a
    # caller that is itself run so): VP404 then says nothing of its evaluation loops.
    grad_off_caller: bool = False
    # Names its body reads and never binds, whose value the walk asked for and did not know: its
    # module's globals (`bound` then gives them what every module-level binding agrees on).
    free: frozenset[str] = frozenset()
    # The parameters (and its module's globals) it reads into Python on every call, before it can
    # return (`host_reads.py`), and the parts of what every `return` gives that it had read (-1:
    # the whole value).
    reads_params: tuple = ()
    returns_read: tuple = ()
    # Parameters whose default is `None`, `True` or `False`: ((name, "None"), ...), what a call
    # that does not pass one leaves it at (`bindings.py`, `caller_branches.py`).
    literal_defaults: tuple = ()


@dataclass(eq=False)
class ClassSummary:
    """A class as call binding needs it: its bases' keys, and what `__init__` stores in
    `self.<attr>` (binding terms; an attribute also assigned in another method is unknown)."""

    bases: tuple = ()
    attrs: dict = field(default_factory=dict)
    reassigned: set = field(default_factory=set)


@dataclass(frozen=True, eq=False)
class Where:
    """The enclosing function and loops of a node, captured when a rule sees it."""

    function: FunctionInfo | None
    loops: tuple[LoopInfo, ...]
    # The branch the node sits in within its function (`conditions.py`), when captured with `here()`.
    condition: Condition | None = None

    @property
    def innermost_loop(self) -> LoopInfo | None:
        return self.loops[-1] if self.loops else None


_MODULE_LEVEL = Where(None, ())
# Launchers that run a function once per process or thread: where its target is (a position, or
# -1 for the `target=` keyword).
_LAUNCHERS = {
    "torch.multiprocessing.spawn": 0, "torch.multiprocessing.start_processes": 0,
    "torch.multiprocessing.Process": -1, "multiprocessing.Process": -1, "threading.Thread": -1,
    "accelerate.notebook_launcher": 0, "torch_xla.distributed.xla_multiprocessing.spawn": 0,
}


class HeatModel:
    def __init__(self, imports: ImportTable, module_name: str = "", import_root: str = "", path: str = "") -> None:
        self._imports = imports
        self._module = module_name
        # Relative imports resolve against the package itself in its `__init__.py`.
        self._importer = f"{module_name}.__init__" if path.replace("\\", "/").endswith("/__init__.py") or path == "__init__.py" else module_name
        # Keys are `<root>:module.name`: same-named modules of different script folders never
        # share heat (see `root_token`); the resolver links imports across roots when unambiguous.
        self._root = root_token(import_root)
        self._path = path
        # Call sites with their nodes, until `number_lines` gives each its line.
        self._site_nodes: list[tuple[CallSite, cst.Call]] = []
        # Lambdas bound to a name (`log = lambda t: ...`), by id: functions of that name.
        self._named_lambdas: dict[int, str] = {}
        # Walk order of loops and of every call (sites keep their call's ordinal): with Python's
        # own line table (`trace_lines`) they number a summary without libcst positions.
        self._loop_order: list[LoopInfo] = []
        self._calls_seen = 0
        self._site_ordinals: list[tuple[CallSite, int]] = []
        self.numbered = False
        self._functions: dict[str, list[FunctionInfo]] = {}
        self._all_functions: list[FunctionInfo] = []
        self._module_loops: list[LoopInfo] = []
        self._module_calls: list[CallSite] = []
        self._function_stack: list[FunctionInfo] = []
        self._loop_stack: list[list[LoopInfo]] = [[]]
        self._class_stack: list[str] = []
        # Per open class: the framework hooks it overrides and how often the framework calls them.
        self._hook_stack: list[dict[str, Heat]] = []
        self._dataloader_names: set[str] = set()
        # `self.metric = RunningAccuracy()` / `trainer = Trainer()`: the class behind a name.
        self._instances: dict[str, str] = {}
        # For call binding (`bindings.py`): classes by key, the parameters (function key, name,
        # what was asked) whose unknown value a rule or the host-data tracker asked about (a bound fact could
        # change a finding there), and the facts the project pass bound to parameters (given to
        # a re-analysis).
        self.classes: dict[str, ClassSummary] = {}
        self.asked: set = set()
        self.seeds: dict = {}
        # What the project's functions return (`FunctionFacts.returns`), given to a re-analysis;
        # the calls whose result the walk asked about and no one knew, as ((asking function's key
        # or None, asked inside a loop), callee, what the walk assumed); and the askers the
        # project pass answered otherwise than they assumed.
        self.returned: dict = {}
        # By caller: what its calls return where it makes them (`FunctionFacts.returned_at`).
        self.returned_at: dict[str, dict] = {}
        # The project pass's routes (`FunctionFacts.routes`) by caller: a call through a
        # parameter returns what the functions every caller passes return.
        self.routes: dict = {}
        self.asked_results: set = set()
        self.answered: list = []
        # What calls of the project's functions read into Python (`FunctionFacts.reads_params`,
        # `returns_read`), given to a re-analysis; the callees the walk asked that of and no one
        # knew; and those of them the project pass found reading something.
        self.read_by: dict = {}
        self.asked_reads: set = set()
        self.reads_answered: tuple = ()
        # The project's functions that step an optimizer outside their own loops, directly or
        # through calls (`FunctionFacts.steps`), given to a re-analysis; the callees a rule asked
        # that of and no one knew; and whether the project pass found one of them stepping.
        self.stepping: frozenset = frozenset()
        self.asked_steps: set = set()
        # Branches on parameters the walk could not decide without the callers: (function key,
        # the test as data, the branch walked, whether it read as data-dependent) (`caller_branches.py`).
        self.asked_branches: set = set()
        self.steps_answered: bool = False
        # Per name the module binds outside functions and classes: what a read of it gives after
        # each binding (binding terms; None for a value that is no fact). Functions read these as
        # globals (`FunctionInfo.free`).
        self.module_globals: dict[str, list] = {}
        self._results_seen: dict[int, tuple] = {}  # (callee, answer) by call node, during the walk
        # The current `Where`, shared by every ask until a function or loop opens or closes.
        self._where: Where | None = None
        # A `for` whose header is being walked: it becomes active when its body starts.
        self._pending: LoopInfo | None = None
        # Asked at each call: is the walk under a rate-limit guard? Under which branch? (set by the engine)
        self.guard_probe: Callable[[], bool] = _never
        # Asked at `zero_grad()`: is the walk under `torch.no_grad()` / `inference_mode()`? (set by the engine)
        self.grad_off_probe: Callable[[], bool] = _never
        self.condition_probe: Callable[[], Condition | None] = _no_condition
        self._timing_module = bool(_TIMING_MODULE.search(module_name.rsplit(".", 1)[-1]))
        # The module's own text names an accelerator (set by the engine before the walk).
        self.accelerated = True
        # Its text chooses a numeric precision (autocast, a GradScaler, a 16-bit dtype: set by
        # the engine): its backward passes are not full-precision training's.
        self.precision_chosen = False

    # ----- recording, called by the engine in walk order -----

    def where(self) -> Where:
        where = self._where
        if where is None:
            function = self._function_stack[-1] if self._function_stack else None
            loops = self._loop_stack[-1]
            where = self._where = Where(function, tuple(loops)) if function is not None or loops else _MODULE_LEVEL
        return where

    def here(self) -> Where:
        """`where()` with the branch the walk is in: what a rule keeps to report later, so the
        finding still knows the condition it runs under (an opt-in flag, a rate limit)."""
        where, condition = self.where(), self.condition_probe()
        return where if condition is None else replace(where, condition=condition)

    def enter_class(self, node: cst.ClassDef) -> None:
        if not self._class_stack and not self._function_stack:
            bases = tuple(key for base in node.bases if (key := self._named_class_key(base.value)) is not None)
            self.classes.setdefault(self._local_key(node.name.value), ClassSummary(bases))
        self._class_stack.append(node.name.value)
        self._hook_stack.append(hooks_of_class(node, self._imports) if node.bases else {})

    def leave_class(self) -> None:
        self._class_stack.pop()
        self._hook_stack.pop()

    def enter_function(self, node: cst.FunctionDef | cst.Lambda, name: str | None = None) -> None:
        """A `def`, or a lambda bound to `name`: its body runs where it is called."""
        name = node.name.value if name is None else name
        decorators = node.decorators if type(node) is cst.FunctionDef else ()
        # A method's key is `module.Class.method` so that `self.method()` finds it.
        local = f"{self._class_stack[-1]}.{name}" if self._class_stack and not self._function_stack else name
        key = self._local_key(local)
        params = frozenset(p.name.value for p in _all_params(node.params))
        # `def __init__(self, train_data: DataLoader)`: the parameter is a data source.
        for param in _all_params(node.params):
            annotation = param.annotation.annotation if param.annotation is not None else None
            if annotation is not None and (dotted_name(annotation) or "").endswith("DataLoader"):
                self._dataloader_names.add(param.name.value)
        info = FunctionInfo(
            key, node, params, timing=self._timing_module or bool(_TIMING_FUNCTION.search(name)),
            accelerated=self.accelerated, path=self._path,
            order=tuple(p.name.value for p in (*node.params.posonly_params, *node.params.params)),
            method=bool(self._class_stack) and not self._function_stack and not any(
                dotted_name(d.decorator) == "staticmethod" for d in decorators
            ),
            bound=self.seeds.get(key, ()),
            literal_defaults=tuple(
                (p.name.value, p.default.value) for p in _all_params(node.params)
                if type(p.default) is cst.Name and p.default.value in LITERAL_NAMES
            ),
        )
        # `@functools.cache` bodies run once per distinct argument, not once per call.
        info.memoised = any(self._is_memoising(d.decorator) for d in decorators)
        # The framework calls its hooks (`training_step`, `on_step_end`) as often as their names say.
        hook = self._hook_stack[-1].get(name) if self._class_stack and not self._function_stack else None
        if decorators:
            hook = max(hook or Heat.ONCE, ignite_handler_heat(node) or Heat.ONCE)
        if hook is not None:
            info.heat = hook
            if hook > Heat.ONCE:
                info.hook = hook_reason(self._hook_stack[-1] if self._class_stack else {}, node, hook)
        self._functions.setdefault(key, []).append(info)
        self._all_functions.append(info)
        self._function_stack.append(info)
        self._loop_stack.append([])
        self._where = None

    def name_lambda(self, node: cst.Lambda, name: str) -> None:
        """`name = lambda ...: ...`: the walk treats the lambda as a function called `name`."""
        self._named_lambdas[id(node)] = name

    def lambda_name(self, node: cst.Lambda) -> str | None:
        """The name of a lambda the walk treats as a function (None: it runs where it stands)."""
        return self._named_lambdas.get(id(node))

    def leave_function(self) -> None:
        self._where = None
        self._function_stack.pop()
        self._loop_stack.pop()

    def enter_loop(self, node: cst.For | cst.While) -> None:
        loops = self._loop_stack[-1]
        parent = loops[-1] if loops else None
        header = self._header(node)
        data_source = bool(header) and header != "while True"
        info = LoopInfo(
            node, parent, data_source=data_source, retry=_is_retry_loop(node),
            over_rows=_iterates_tensor_rows(node), over_optimizers=not data_source and _iterates_optimizers(node),
            over_listed=_iterates_listed_settings(node),
            path=self._path, header=header,
            targets=frozenset(_identifiers(node.target)) if type(node) is cst.For else frozenset(),
            in_forward=bool(self._class_stack and self._function_stack)
            and getattr(self._function_stack[-1].node, "name", None) is not None
            and self._function_stack[-1].node.name.value == "forward",
            sibling_forward=self._local_key(f"{self._class_stack[-1]}.forward")
            if self._class_stack and len(self._function_stack) == 1 and self._function_stack[0].method else "",
        )
        self._loop_order.append(info)
        if parent is not None:
            parent.nested.append(info)
            for outer in loops:
                outer.has_nested_loop = True
        if self._function_stack:
            self._function_stack[-1].loops.append(info)
        else:
            self._module_loops.append(info)
        if type(node) is cst.For:
            # The iterable runs once, before the first iteration: the loop opens with its body.
            self._pending = info
            return
        loops.append(info)
        self._where = None

    @property
    def timing_module(self) -> bool:
        """A module named for benchmarking (bench.py, infer_bench.py, benchmark_*.py)."""
        return self._timing_module

    def loop_where(self, node: cst.For | cst.While) -> Where:
        """Where the body of the loop `node` runs, asked while its header is walked."""
        pending = self._pending
        if pending is not None and pending.node is node:
            outer = self.where()
            return Where(outer.function, (*outer.loops, pending))
        return self.where()

    def enter_block(self, body: cst.CSTNode) -> None:
        """A suite starts: when it is the body of the `for` whose header was just walked, that loop opens."""
        pending = self._pending
        if pending is not None and pending.node is not None and pending.node.body is body:
            self._pending = None
            self._loop_stack[-1].append(pending)
            self._where = None

    def leave_loop(self) -> None:
        self._where = None
        self._pending = None
        self._loop_stack[-1].pop()

    def on_assign(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        loops = self._loop_stack[-1]
        if loops and is_environment_step(targets, value):
            loops[-1].environment_step = loops[-1].environment_step or _shown_call(value)
        if type(value) is cst.Call:
            class_key = self.class_key(value)
            if class_key is not None:
                for target in targets:
                    name = dotted_name(target)
                    if name:
                        self._instances[name] = class_key
            qualified = self._imports.call_name(value) or ""
            if qualified.endswith("DataLoader"):
                for target in targets:
                    name = terminal_name(target)
                    if name:
                        self._dataloader_names.add(name)
        source = iterated_source(value)
        if type(source) is cst.Name and source.value in self._dataloader_names or (
            source is not value and self._names_a_data_source(source)
        ):
            # `self.train_data = train_data`: the attribute holds the same loader; so does a
            # progress bar over it (`bar = tqdm(enumerate(loader))`, `tbar = tqdm(self.train_loader)`),
            # which a loop header iterates as it would the loader itself.
            for target in targets:
                name = terminal_name(target)
                if name:
                    self._dataloader_names.add(name)

    def _names_a_data_source(self, node: cst.BaseExpression) -> bool:
        """`loader`, `self.train_loader`: a reference a loop header would take for a data source."""
        name = terminal_name(node) if type(node) in (cst.Name, cst.Attribute) else None
        return bool(name) and (name in self._dataloader_names or bool(_DATA_SOURCE.search(name)))

    def note_dependency(self, name: str, what: str) -> None:
        """The walk asked about the unknown value of `name` (`what`: "number" or "origin"); if it
        is a parameter of the function being walked, the project pass analyses the file again
        when call sites bind such a fact to it."""
        function = self._function_stack[-1] if self._function_stack else None
        if function is not None and name in function.params:
            self.asked.add((function.key, name, what))

    @property
    def function_depth(self) -> int:
        """How many functions the walk is inside (1 in a function not nested in another)."""
        return len(self._function_stack)

    @property
    def in_class(self) -> bool:
        """Whether the walk is inside a class body (a method's `def` binds no module name)."""
        return bool(self._class_stack)

    @property
    def path(self) -> str:
        return self._path

    @property
    def root(self) -> str:
        """The token of this module's import root ("" for none)."""
        return self._root

    def note_global(self, name: str, term: tuple | None) -> None:
        """A module-level binding of `name`: what a read of it gives afterwards (`module_globals`)."""
        terms = self.module_globals.setdefault(name, [])
        if term not in terms:
            terms.append(term)

    def note_free_names(self, names: frozenset[str]) -> None:
        """The function being walked read these globals without knowing their value: the project
        pass analyses the file again when the module's bindings of one agree on a fact."""
        function = self._function_stack[-1]
        function.free = names
        for name in names:
            for what in ("tensor", "number", "origin"):
                self.asked.add((function.key, name, what))

    def returned_by(self, call: cst.Call, assumed: str | None = None) -> tuple | None:
        """What a call of a project function returns, from the project pass (`returned`). When
        nothing is known yet, the question is kept with what the walk assumes instead (`assumed`:
        "tensor" by the callee's name, or None), so that a different answer brings the file back."""
        seen = self._results_seen.get(id(call), _UNSEEN)
        if seen is _UNSEEN:
            callee = self._project_callee(call)
            found = self.returned.get(resolve_key(callee, self.returned)) if callee and self.returned else None
            if callee is None and self.routes:
                found = self._routed_result(call)
            if callee is not None and found in (None, _TENSOR_FACT) and self.returned_at:
                found = self._returned_here(callee) or found
            self._results_seen[id(call)] = seen = (callee, found)
        callee, found = seen
        if callee is not None and found is None:
            function = self._function_stack[-1] if self._function_stack else None
            asker = (function.key if function is not None else None, bool(self._loop_stack[-1]))
            self.asked_results.add((asker, callee, assumed))
        return found

    def _returned_here(self, callee: str) -> tuple | None:
        """What `callee` returns where the function being walked calls it (`returned_at`)."""
        function = self._function_stack[-1] if self._function_stack else None
        here = self.returned_at.get(function.key) if function is not None else None
        return here.get(resolve_key(callee, here)) if here else None

    def _project_callee(self, call: cst.Call) -> str | None:
        """The key of the function `call` runs when it may be the project's (not a library's)."""
        callee = self.callee_key(call)
        return None if callee is None or unrooted(callee).split(".", 1)[0] in LIBRARY_ROOTS else callee

    def reads_of_call(self, call: cst.Call) -> tuple[FunctionFacts, bool] | None:
        """What a call of a project function reads into Python, from the project pass (`read_by`),
        and whether the callee is this module's own (its globals are this module's); a callee
        nobody knew yet is remembered, so that the file is analysed again if it reads."""
        callee = self._project_callee(call)
        if callee is None:
            return None
        found = self.read_by.get(resolve_key(callee, self.read_by)) if self.read_by else None
        if found is None:
            self.asked_reads.add(callee)
            return None
        return found, bool(self._module) and callee.startswith(self._local_key(""))

    def steps_elsewhere(self, callee: str) -> bool:
        """Does the project function `callee` (of another module, say) step an optimizer once
        per call, from the project pass (`stepping`)? A callee nobody knew yet is remembered, so
        that the file is analysed again if it does."""
        if resolve_key(callee, self.stepping) in self.stepping:
            return True
        self.asked_steps.add(callee)
        return False

    def _routed_result(self, call: cst.Call) -> tuple | None:
        """`step = step_fn(batch)` where every caller passes `step_fn=self.train_step`: what the
        functions the project pass bound it to return, when they agree."""
        function = self._function_stack[-1] if self._function_stack else None
        if function is None or type(call.func) is not cst.Name or call.func.value not in function.params:
            return None
        via = (("param", function.key, call.func.value), "__call__")
        results = {self.returned.get(key) for bound, key in self.routes.get(function.key, ()) if bound == via}
        return results.pop() if len(results) == 1 else None

    def on_call(self, call: cst.Call, via: tuple | None = None) -> CallSite | None:
        """Record a call; returns its call site (None when the callee cannot be named and no
        receiver term `via` stands for it)."""
        ordinal = self._calls_seen
        self._calls_seen = ordinal + 1
        qualified = self._imports.call_name(call)
        function = self._function_stack[-1] if self._function_stack else None
        loops = self._loop_stack[-1]
        if reads_clock(call, qualified):
            for loop in loops:
                loop.reads_clock = True
            if not loops and function is not None:
                function.reads_clock = True
        if not self.precision_chosen and is_backward(call, self._imports):
            if loops:
                loops[-1].fp32_backward = True
            elif function is not None:
                function.fp32_backward = True
        if self._is_training_signal(call, qualified):
            shown = _shown_call(call)
            for loop in loops:
                loop.trains = True
                loop.train_call = loop.train_call or shown
            cadence = self._update_cadence(call, loops) if self._is_update(call) else None
            if cadence is not None:
                cadence.steps_here = True
                cadence.update_call = cadence.update_call or shown
            elif function is not None and self._is_update(call):
                function.steps = True
            if function is not None:
                function.trains = True
                function.updates = function.updates or method_name(call) in _UPDATES
                function.backward = function.backward or method_name(call) == "backward" or (
                    qualified == "torch.autograd.backward"
                )
        elif function is not None and method_name(call) == "eval" and not call.args:
            function.evaluates = True
        elif is_model_name(terminal_name(call.func)):
            for loop in loops:
                loop.forward = True
                loop.forward_call = loop.forward_call or _shown_call(call)
            if function is not None and not loops:
                # A forward outside the function's own loops: calling it once runs the model once.
                function.forward = True
        if loops and self._is_tensor_work(call, qualified, function):
            for loop in loops:
                loop.tensor_work = True
        callee = self.callee_key(call)
        if callee is None and via is not None:
            callee = UNBOUND
        site = None
        if callee is not None:
            foreign = not callee.startswith(self._rooted(f"{self._module}."))
            site = CallSite(
                callee, self.where(), self.guard_probe(), self.accelerated, foreign, via=via,
                condition=self.condition_probe(), grad_off=self.grad_off_probe(),
            )
            if via is not None and via[1] == "__call__":
                site.shown = terminal_name(call.func) or ""
            self._site_nodes.append((site, call))
            self._site_ordinals.append((site, ordinal))
            self._add_site(site)
        self._launched(call, qualified, ordinal)
        return site

    def _launched(self, call: cst.Call, qualified: str | None, ordinal: int) -> None:
        """`mp.spawn(train_worker, nprocs=n)`, `Process(target=run)`: the function handed to a
        process or thread launcher is that process's main, run once per process where the launch
        is (not a function nobody calls, which could be a step run by a framework)."""
        position = _LAUNCHERS.get(qualified or "")
        if position is None:
            return
        target = keyword_arg(call, "target") if position < 0 else positional_arg(call, position)
        if target is None and position >= 0:
            target = keyword_arg(call, "fn")
        reference = self.function_reference(target.value) if target is not None else None
        if reference is None:
            return
        site = CallSite(
            reference[0], self.where(), self.guard_probe(), self.accelerated,
            not reference[0].startswith(self._rooted(f"{self._module}.")), condition=self.condition_probe(),
            grad_off=self.grad_off_probe(),
        )
        self._site_nodes.append((site, call))
        self._site_ordinals.append((site, ordinal))
        self._add_site(site)

    # ----- classification -----

    def _header(self, node: cst.For | cst.While) -> str:
        """`iterates train_loader` when the loop reads a data source (by name or a recognised
        loader), `loops on iter_num` / `counts to max_steps` for a `while` or `range()` over a
        step count (also a data source), `while True`, else ""."""
        source = node.iter if type(node) is cst.For else node.test
        for name in _identifiers(source):
            if _DATA_SOURCE.search(name) or name in self._dataloader_names:
                return f"iterates {name}"
        counted = None
        if type(node) is cst.While:
            if type(source) is cst.Name and source.value == "True":
                return "while True"
            counted = next((n for n in _identifiers(source) if _STEP_COUNT.search(n)), None)
        elif type(source) is cst.Call and dotted_name(source.func) == "range":
            counted = next((n for a in source.args for n in _identifiers(a.value) if _STEP_COUNT.search(n)), None)
            return f"counts to {counted}" if counted else ""
        return f"loops on {counted}" if counted else ""

    def _is_training_signal(self, call: cst.Call, qualified: str | None) -> bool:
        """Backward passes and weight updates. A forward alone is not training: it is eval. A
        `zero_grad()` under `torch.no_grad()` prepares no update: nothing there makes a gradient
        (StyleTTS2's validation loop zeroes them out of habit)."""
        method = method_name(call)
        if method == "backward":
            return True
        if method == "zero_grad":
            return not self.grad_off_probe()
        if method == "step":
            return self._is_update(call)
        return qualified == "torch.autograd.backward"

    @staticmethod
    def _is_update(call: cst.Call) -> bool:
        """`optimizer.step()`, `optimizers[0].step()`, `scaler.step(optimizer)`: one optimizer update."""
        if method_name(call) != "step":
            return False
        owner = receiver(call)
        while type(owner) is cst.Subscript:
            owner = owner.value
        name = terminal_name(owner)
        return is_optimizer_name(name) or is_scaler_name(name)

    @staticmethod
    def _update_cadence(call: cst.Call, loops: list[LoopInfo]) -> LoopInfo | None:
        """The loop an update steps once per iteration: the innermost one, past loops over the
        optimizers themselves (the step's receiver or argument is the loop's own variable)."""
        owner = receiver(call)
        used = (_variables(owner) if owner is not None else set()) | {n for a in call.args for n in _variables(a.value)}
        for loop in reversed(loops):
            if loop.over_optimizers or (loop.targets and used & loop.targets and not loop.data_source):
                loop.over_optimizers = True
                continue
            return loop
        return None

    def _is_tensor_work(self, call: cst.Call, qualified: str | None, function: FunctionInfo | None) -> bool:
        # Tensor maths, not housekeeping (`torch.cuda.empty_cache()`, `torch.manual_seed`).
        if qualified is not None and returns_tensor(qualified):
            return True
        if is_model_name(terminal_name(call.func)):
            return True
        return function is not None and type(call.func) is cst.Name and call.func.value in function.params

    def _is_memoising(self, decorator: cst.BaseExpression) -> bool:
        target = decorator.func if type(decorator) is cst.Call else decorator
        return self._imports.qualified_name(target) in _MEMOISERS

    def _local_key(self, name: str) -> str:
        return self._rooted(f"{self._module}.{name}" if self._module else name)

    def _rooted(self, dotted: str) -> str:
        return f"{self._root}:{dotted}" if self._root else dotted

    def class_key(self, call: cst.Call) -> str | None:
        """The key of the class a call constructs (by the CapWords convention), else None."""
        return self._named_class_key(call.func)

    def _named_class_key(self, node: cst.BaseExpression) -> str | None:
        """The key of the class `node` names (CapWords), else None."""
        dotted = dotted_name(node)
        if dotted is None or not dotted.rsplit(".", 1)[-1][:1].isupper():
            return None
        imported = self._imports.qualify(dotted)
        if imported is not None:
            return self._rooted(absolute_name(imported, self._importer))
        return self._local_key(dotted) if "." not in dotted else None

    def reexports(self) -> dict[str, str]:
        """What a package's `__init__.py` imports (`from .multibox_loss import MultiBoxLoss`), by
        the key a caller spells (`layers.modules.MultiBoxLoss`, after `from layers.modules import
        MultiBoxLoss`) and the key it names; empty for any other module."""
        if not self._importer.endswith(".__init__"):
            return {}
        found = {}
        for local, imported in self._imports.imported_names().items():
            alias, target = self._local_key(local), self._rooted(absolute_name(imported, self._importer))
            if alias != target:
                found[alias] = target
        return found

    def callee_key(self, call: cst.Call) -> str | None:
        """The key of the called function: local names, `self.method`, methods of instances of
        classes constructed in this module, imported functions, and `getattr(obj, "name")`."""
        func = call.func
        named = attribute_of_getattr(func)
        if named is not None:
            func = named
        if type(func) is cst.Attribute:
            owner = dotted_name(func.value)
            instance = self._instance_of(owner) if owner is not None else None
            if instance is not None:
                return f"{instance}.{func.attr.value}"
            if type(func.value) is cst.Call:
                # `Probe().run(loss)`: a method of the project's class, constructed right there.
                constructed = self.class_key(func.value)
                if constructed is not None and unrooted(constructed).split(".", 1)[0] not in LIBRARY_ROOTS:
                    return f"{constructed}.{func.attr.value}"
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and self._class_stack
        ):
            return self._local_key(f"{self._class_stack[-1]}.{func.attr.value}")
        if type(func) is cst.Name and func.value == "self" and self._class_stack:
            # `out = self(x)` in a module's method: calling an `nn.Module` runs its `forward`.
            return self._local_key(f"{self._class_stack[-1]}.forward")
        dotted = dotted_name(func)
        if dotted is None:
            return None
        function = self._function_stack[-1] if self._function_stack else None
        if function is not None and type(func) is cst.Name and func.value in function.params:
            # `def run_single_epoch(self, step_fn): step_fn(batch)` beside a function named
            # `step_fn` elsewhere: the parameter is what every caller passes (bound through `via`).
            return None
        imported = self._imports.qualify(dotted)
        if imported is not None:
            return self._rooted(absolute_name(imported, self._importer))
        return self._local_key(dotted) if "." not in dotted else None

    def _instance_of(self, name: str) -> str | None:
        """The class of the instance `name` holds; a parameter of the function being walked is
        another value of that name (`def run(model): model.step()` beside a global `model`)."""
        function = self._function_stack[-1] if self._function_stack else None
        root = name.split(".", 1)[0]
        if function is not None and root != "self" and root in function.params:
            return None
        return self._instances.get(name)

    def function_reference(self, node: cst.BaseExpression) -> tuple[str, int] | None:
        """What a function named without calling it is (`callback=log_step`, `self.step`, an
        imported helper): its key and how many leading parameters a call through the reference
        fills itself (a bound method fills `self`); None for anything else."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
            if self._class_stack:
                return self._local_key(f"{self._class_stack[-1]}.{node.attr.value}"), 1
            return None
        dotted = dotted_name(node)
        if dotted is None or dotted.rsplit(".", 1)[-1][:1].isupper():
            return None  # a class: constructing it is not calling a function
        imported = self._imports.qualify(dotted)
        if imported is not None:
            return self._rooted(absolute_name(imported, self._importer)), 0
        key = self._local_key(dotted) if "." not in dotted else None
        return (key, 0) if key is not None and key in self._functions else None

    def qualified_call(self, call: cst.Call) -> str | None:
        """The qualified name a call spells (`functools.partial` however it was imported)."""
        return self._imports.call_name(call)

    def on_context(self, item: cst.BaseExpression) -> None:
        """`with Timer():` / `with tracker:`: entering and leaving run the class's `__enter__` and
        `__exit__` where the `with` is, as often as it runs."""
        owner = None
        if type(item) is cst.Call:
            owner = self.class_key(item)
        elif (name := dotted_name(item)) is not None:
            owner = self._instance_of(name)
        if owner is None:
            return
        foreign = not owner.startswith(self._rooted(f"{self._module}."))
        for method in ("__enter__", "__exit__"):
            site = CallSite(
                f"{owner}.{method}", self.where(), self.guard_probe(), self.accelerated, foreign,
                condition=self.condition_probe(), through_instance=True, grad_off=self.grad_off_probe(),
            )
            self._site_nodes.append((site, item))
            self._add_site(site)

    def _add_site(self, site: CallSite) -> None:
        function = self._function_stack[-1] if self._function_stack else None
        if function is not None:
            function.calls.append(site)
        else:
            self._module_calls.append(site)
        for loop in self._loop_stack[-1]:
            loop.calls.append(site)

    # ----- resolution -----

    def resolve(self, external: Mapping[str, FunctionFacts] | None = None) -> None:
        """Classify loops and propagate heat within this module.

        `external` carries what a project-wide pass learned about functions (defined here or
        elsewhere) from other modules' call sites; without it foreign callees are unknown.
        """
        _Resolver(
            self._all_functions, self._module_loops, self._module_calls, external or {}
        ).run()

    @property
    def functions(self) -> list[FunctionInfo]:
        return self._all_functions

    def functions_keyed(self, key: str) -> list[FunctionInfo]:
        """This module's functions with `key`, as walked so far."""
        return self._functions.get(key, [])

    @property
    def module_loops(self) -> list[LoopInfo]:
        return self._module_loops

    @property
    def module_calls(self) -> list[CallSite]:
        return self._module_calls

    @property
    def call_sites(self) -> list[CallSite]:
        return self._module_calls + [site for fn in self._all_functions for site in fn.calls]

    def facts(self) -> dict[str, FunctionFacts]:
        """What this module's resolution concluded about each of its functions."""
        found: dict[str, FunctionFacts] = {}
        for fn in self._all_functions:
            mine = FunctionFacts(fn.trains_transitively, fn.has_step_loop, fn.heat, fn.steps_transitively, fn.accelerated)
            found[fn.key] = found[fn.key].merge(mine) if fn.key in found else mine
        return found

    def judgement_inputs(self, where: Where, reads: tuple[JudgementInput, ...] = EVERY_INPUT) -> tuple:
        """What a deferred severity at `where` reads of the resolved heat (see `deferred.py`), of
        the inputs it `reads`: the kinds of the loops around it; for code outside loops, its
        function's heat (or only whether it runs every step) and, when that function runs every
        step, the training facts of the functions of its class; whether its module is lent a device."""
        loops = tuple(
            (loop.is_step, loop.is_epoch, loop.fp32_backward_call, loop.reads_clock) for loop in where.loops
        ) if JudgementInput.LOOPS in reads else ()
        function = where.function
        device = (function is None or function.accelerated) if JudgementInput.DEVICE in reads else None
        grad_off = (function is not None and function.grad_off_caller) if JudgementInput.GRAD_OFF_CALLER in reads else None
        reads_heat = JudgementInput.FUNCTION_HEAT in reads
        if function is None or where.loops or not (reads_heat or JudgementInput.RUNS_EVERY_STEP in reads):
            return loops, None, (), device, grad_off
        heat = function.heat if reads_heat else function.heat is Heat.STEP
        beside: tuple = ()
        if function.heat is Heat.STEP:
            owner = function.key.rsplit(".", 1)[0] + "."
            beside = tuple(
                (fn.has_step_loop, fn.trains_transitively) for fn in self._all_functions if fn.key.startswith(owner)
            )
        return loops, heat, beside, device, grad_off

    def number_lines(self, positions: Mapping[cst.CSTNode, object]) -> None:
        """Give loops and call sites their lines, from the positions of this module's nodes."""
        self.numbered = True
        for loop in self._loops():
            if loop.node is not None and loop.node in positions:
                loop.line = positions[loop.node].start.line
        for site, node in self._site_nodes:
            if node in positions:
                site.line = positions[node].start.line
        for fn in self._all_functions:
            # Every `def`: a hook's, or a training step's the project pass finds nobody calls.
            if fn.node is not None and fn.node in positions:
                fn.line = positions[fn.node].start.line

    def number_lines_from(self, lines: SourceLines | None) -> bool:
        """Give loops, call sites and hooks their lines from Python's line table of the same
        source; False (nothing changed) when its loops, calls or definitions do not match the walk."""
        if lines is None or (len(lines.loops), len(lines.calls), len(lines.defs)) != (
            len(self._loop_order), self._calls_seen, len(self._all_functions)
        ):
            return False
        for loop, line in zip(self._loop_order, lines.loops):
            loop.line = line
        for site, ordinal in self._site_ordinals:
            site.line = lines.calls[ordinal]
        for fn, line in zip(self._all_functions, lines.defs):
            fn.line = line
        self.numbered = True
        return True

    def copy_lines(self, other: HeatModel) -> bool:
        """Take the lines of `other`, a model of the same source built by the same walk."""
        loops, theirs = self._loops(), other._loops()
        sites, their_sites = self.call_sites, other.call_sites
        if len(loops) != len(theirs) or len(sites) != len(their_sites):
            return False
        for mine, found in zip(loops, theirs):
            mine.line = found.line
        for site, found in zip(sites, their_sites):
            site.line = found.line
        if len(self._all_functions) == len(other._all_functions):
            for fn, found in zip(self._all_functions, other._all_functions):
                fn.line = found.line
        self.numbered = True
        return True

    def _loops(self) -> list[LoopInfo]:
        return self._module_loops + [loop for fn in self._all_functions for loop in fn.loops]

    def release_tree(self) -> None:
        """Drop references to syntax nodes so a summary outlives its parsed module cheaply."""
        # The probe is code, not data: a stored summary never carries it.
        self.__dict__.pop("guard_probe", None)
        self.__dict__.pop("grad_off_probe", None)
        self.__dict__.pop("condition_probe", None)
        self._site_nodes = []
        self._named_lambdas = {}  # ids of nodes no longer there
        self._results_seen = {}
        for fn in self._all_functions:
            fn.node = None
            for loop in fn.loops:
                loop.node = None
        for loop in self._module_loops:
            loop.node = None
        for site in self.call_sites:
            if site.condition is not None and site.condition.node is not None:
                site.condition = site.condition.released()


def _never() -> bool:
    return False


def attribute_of_getattr(func: cst.BaseExpression) -> cst.Attribute | None:
    """`getattr(obj, "step")` as the callee: the attribute it names, `obj.step`."""
    if type(func) is not cst.Call or dotted_name(func.func) != "getattr" or len(func.args) < 2:
        return None
    name = func.args[1].value
    if type(name) is not cst.SimpleString:
        return None
    text = literal_string(name)
    if not text or not text.isidentifier():
        return None
    return cst.Attribute(value=func.args[0].value, attr=cst.Name(text))


def _no_condition() -> Condition | None:
    return None


# The callee of a call site known only through its receiver (`CallSite.via`), until bound.
UNBOUND = "?"
_MAPPING_VIEWS = frozenset({"items", "values", "keys"})


def _is_a_test(function: FunctionInfo) -> bool:
    """A pytest test, or any function of a test file (`tests/...`, `test_*.py`)."""
    return function.key.rsplit(".", 1)[-1].startswith("test") or is_test_path(function.path)


def _iterates_optimizers(node: cst.For | cst.While) -> bool:
    """`for name in self._optimizers:` (then `optimizer = getattr(self, name + "_")`), `for opt in
    optimizers.values()`: a loop over the optimizers themselves (zeroing or stepping each), not
    over batches, whatever the body calls them."""
    if type(node) is not cst.For:
        return False
    iterated = node.iter
    if type(iterated) is cst.Call and type(iterated.func) is cst.Attribute and iterated.func.attr.value in _MAPPING_VIEWS:
        iterated = iterated.func.value
    return is_optimizer_name(terminal_name(iterated))


def _iterates_listed_settings(node: cst.For | cst.While) -> bool:
    """`for lr in [0.1, 0.01]:`, `for hook, wrapper, state in [(NO, NO, {}), (FP16, NO, {})]:`: a
    list or tuple written out in the loop header, of literals, names and attributes (grouped in
    tuples, lists or dicts), with no call that could make a batch."""
    if type(node) is not cst.For or type(node.iter) not in (cst.List, cst.Tuple):
        return False
    pending = [element.value for element in node.iter.elements]
    if not pending:
        return False
    while pending:
        part = pending.pop()
        if type(part) in (cst.List, cst.Tuple, cst.Set):
            pending.extend(element.value for element in part.elements)
        elif type(part) is cst.Dict:
            pending.extend(v for element in part.elements if type(element) is cst.DictElement for v in (element.key, element.value))
        elif type(part) not in (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString):
            if not (type(part) is cst.UnaryOperation and type(part.expression) in (cst.Integer, cst.Float)):
                return False
    return True


def another_target(site: CallSite) -> CallSite:
    """A copy of `site` for a second function it may call, recorded where the first one is."""
    copy = replace(site, via=None)
    caller = site.where.function
    (caller.calls if caller is not None else site.where.loops[-1].calls if site.where.loops else []).append(copy)
    for loop in site.where.loops:
        if caller is not None or loop is not site.where.loops[-1]:
            loop.calls.append(copy)
    return copy


def called_once(function: FunctionInfo, heat: HeatModel, seen: frozenset[str] = frozenset()) -> bool:
    """Called, and only once per run: its heat is `once` and the module's own code reaches it from
    its top level (`main()` under `if __name__ == "__main__":`, or a function that is itself
    called once), outside loops. A function nobody calls here may be called per epoch from
    elsewhere, and so may one whose callers nobody calls (a library class's methods)."""
    if function.heat is not Heat.ONCE or function.hook or function.key in seen:
        return False
    if any(site.callee == function.key and not site.where.loops for site in heat.module_calls):
        return True
    seen = seen | {function.key}
    return any(
        site.callee == function.key and not site.where.loops and called_once(other, heat, seen)
        for other in heat.functions for site in other.calls
    )


def heat_of(where: Where) -> Heat:
    """The innermost loop with a kind decides: a step loop is STEP, an eval loop EVAL (even
    inside a training loop: it runs under an eval interval), an epoch loop at least EPOCH;
    loops without a kind take the heat of what encloses them, and the function's heat last."""
    heat = where.function.heat if where.function is not None else Heat.ONCE
    for loop in reversed(where.loops):
        if loop.is_step:
            return Heat.STEP
        if loop.is_eval:
            return Heat.EVAL
        if loop.is_epoch:
            return max(heat, Heat.EPOCH)
    return heat


def heat_trace(where: Where) -> tuple[TraceStep, ...]:
    """Why `heat_of(where)` is what it is, from the line outwards: the call sites that lead to
    the loop deciding it, and that loop with the reason for its kind. Empty at ONCE heat.

    It follows the same path as `heat_of`: the innermost loop with a kind, else the function's
    hottest caller (the first call site that gave it its heat), and so on up the calls."""
    steps: list[TraceStep] = []
    seen: set[int] = set()
    while True:
        function = where.function
        heat = function.heat if function is not None else Heat.ONCE
        for loop in reversed(where.loops):
            if loop.is_step or loop.is_eval or (loop.is_epoch and heat <= Heat.EPOCH):
                steps.append(TraceStep(loop.path, loop.line, loop_reason(loop), inferred=loop_inferred(loop)))
                return (*steps, *opted_in(function))
            if loop.is_epoch:
                break
        if function is None or heat is Heat.ONCE or id(function) in seen:
            return (*steps, *opted_in(function))
        seen.add(id(function))
        site = function.heat_site
        if site is None:
            if function.hook and not function.outer_trace:
                return (*steps, TraceStep(function.path, function.line, function.hook, inferred=function.hook_inferred))
            return (*steps, *function.outer_trace)
        where = site.where
        caller = where.function.path if where.function is not None else where.loops[-1].path if where.loops else ""
        condition = _site_condition(site, function)
        steps.append(TraceStep(
            caller, site.line, _call_reason(site, function),
            branch=condition.text if condition is not None else "",
            branch_kind=condition.kind.name.lower() if condition is not None else "",
            waits=where.loops[-1].reads if where.loops else "",
        ))


def opted_in(function: FunctionInfo | None) -> tuple[TraceStep, ...]:
    """The call that makes `function` opt-in only (`calls update() when args.gail holds`), as the
    last step of a trace that ends inside it: its loops run only in that configuration."""
    if function is None:
        return ()
    site = function.opt_in_site
    if site is None:
        return function.opt_in_trace
    caller = site.where.function
    if site.condition is None or site.condition.kind is not ConditionKind.OPT_IN:
        return opted_in(caller)  # an unconditional call in a caller that is opt-in only
    path = caller.path if caller is not None else site.where.loops[-1].path if site.where.loops else function.path
    return (TraceStep(
        path, site.line, f"calls {_callee_name(site)}(), and every call the project shows is opt-in",
        branch=site.condition.text, branch_kind="opt_in",
    ),)


def function_trace(function: FunctionInfo) -> tuple[TraceStep, ...]:
    """Why a function is as hot as its heat: its hottest call site, up to a loop."""
    return heat_trace(Where(function, ()))


def _call_reason(site: CallSite, callee: FunctionInfo) -> str:
    what = f"calls {_callee_name(site)}()"
    if site.guarded:
        what += " at the update cadence" if callee.steps_transitively else " under a rate-limit guard"
    if callee.evaluates and not callee.trains_transitively and callee.heat is Heat.EVAL:
        what += ", an evaluation"
    return what


def is_environment_step(targets: list[cst.BaseExpression], value: cst.BaseExpression) -> bool:
    """`obs, reward, terminated, truncated, info = envs.step(actions)`: a simulator step (the
    Gym API's unpacking), not an optimizer, scheduler or scaler step."""
    return (
        type(value) is cst.Call and method_name(value) == "step" and len(targets) == 1
        and type(targets[0]) in (cst.Tuple, cst.List) and len(targets[0].elements) >= 4
    )


def _ancestors(loop: LoopInfo) -> Iterator[LoopInfo]:
    outer = loop.parent
    while outer is not None:
        yield outer
        outer = outer.parent


def loop_reason(loop: LoopInfo) -> str:
    """`step loop: iterates train_loader, calls optimizer.step()`: the loop's kind and why."""
    kind = "step" if loop.is_step else "eval" if loop.is_eval else "epoch"
    nested = loop.because_loop
    at = f" at line {nested.line}" if nested is not None else ""
    site = loop.because_site
    called = f"{_callee_name(site)}()" if site is not None else ""
    if loop.is_step:
        if loop.rollout:
            reason = f"calls {loop.environment_step}, collecting the experience the loop around it trains on"
        elif loop.steps_here:
            reason = f"calls {loop.update_call}" + (f" around the inner step loop{at}" if nested is not None else "")
        elif loop.steps_in_call:
            reason = f"calls {called}, which steps the optimizer"
        elif loop.train_call:
            reason = f"calls {loop.train_call}"
        elif site is not None:
            reason = f"calls {called}, which trains"
        else:
            reason = "times tensor work in a benchmark"
    elif loop.full_batch:
        reason = "updates once and evaluates every iteration: full-batch training, one step per epoch"
    elif loop.is_epoch:
        reason = f"contains the step loop{at}" if nested is not None else f"calls {called}, which has a step loop"
    elif loop.forward_call:
        reason = f"runs {loop.forward_call} without training"
    elif site is not None:
        reason = f"calls {called}, which runs the model without training"
    else:
        reason = "does tensor work on each batch without training"
    return f"{kind} loop: " + (f"{loop.header}, {reason}" if loop.header else reason)


def loop_inferred(loop: LoopInfo) -> bool:
    """Whether the loop's kind rests on weak signals: a benchmark's timed tensor work, or tensor
    work on batches without a model call or an update (see `loop_reason`)."""
    if loop.is_step:
        return not (loop.rollout or loop.steps_here or loop.steps_in_call or loop.train_call or loop.because_site is not None)
    if loop.is_eval:
        return not (loop.forward_call or loop.because_site is not None)
    return False


def _callee_name(site: CallSite) -> str:
    """`log_metrics` for the key `<root>:train.log_metrics` (a method: its own name; a called
    instance: the caller's name for it)."""
    return site.shown or site.callee.rpartition(":")[2].rsplit(".", 1)[-1]


def _site_accelerated(site: CallSite) -> bool:
    """Does this call lend an accelerator to its callee? A call from another module does when
    its caller's code may hold device tensors; a call within a host-only module passes on what
    its caller was lent (a same-named script elsewhere that names a device lends nothing)."""
    caller = site.where.function
    if caller is None:
        return site.foreign and site.accelerated
    return caller.accelerated and (site.foreign or not site.accelerated)


def _site_heat(site: CallSite, callee_steps: bool = False) -> Heat:
    """How often a call runs: a guarded call in a step loop runs every N steps, like an epoch;
    unless the callee steps the optimizer, when the guard is the update cadence of gradient
    accumulation (`if (i + 1) % accum == 0: update(...)`): once per step, as inline."""
    heat = heat_of(site.where)
    return min(heat, Heat.EPOCH) if site.guarded and not callee_steps else heat


def _site_condition(site: CallSite, callee: FunctionInfo) -> Condition | None:
    """The branch a call runs under, as its callee sees it: a rate limit around a call that steps
    the optimizer is the update cadence."""
    condition = site.condition
    if condition is not None and condition.kind is ConditionKind.THROTTLE and callee.steps_transitively:
        return replace(condition, kind=ConditionKind.CADENCE)
    return condition


def _opted_in_site(site: CallSite) -> bool:
    """The call runs only under an opt-in setting: its own branch says so, or its caller is
    opt-in only."""
    caller = site.where.function
    if site.condition is not None and site.condition.kind is ConditionKind.OPT_IN:
        return True
    return caller is not None and (caller.opt_in_site is not None or bool(caller.opt_in_trace))


@dataclass(frozen=True)
class FunctionFacts:
    """What the heat model knows about a function, shared across modules."""

    trains: bool = False
    has_step_loop: bool = False
    heat: Heat = Heat.ONCE
    steps: bool = False
    accelerated: bool = True
    # Why the function is as hot as `heat`: call sites up to a loop (see `heat_trace`).
    trace: tuple[TraceStep, ...] = ()
    # What every visible call site passes to its parameters (`FunctionInfo.bound`).
    bound: tuple = ()
    # What it returns wherever it is called (`FunctionInfo.returns`).
    returns: tuple | None = None
    # The functions its calls through a receiver run (`FunctionInfo.routes`).
    routes: tuple = ()
    # The opt-in call that every caller goes through (`opted_in`), else empty.
    opt_in: tuple[TraceStep, ...] = ()
    # What a call of it reads into Python (`host_reads.py`): the parameters, as (name, position
    # among the arguments of a call, a method's through its instance; -1 for a global of its
    # module), and the parts of its result.
    reads_params: tuple = ()
    returns_read: tuple = ()
    # It runs a backward in full precision on every call (`FunctionInfo.fp32_backward_transitively`).
    fp32_backward: bool = False
    # It reads a host clock on every call (`FunctionInfo.reads_clock`).
    reads_clock: bool = False
    # What its own calls return where it makes them (`FunctionInfo.returned_at`).
    returned_at: tuple = ()
    # Some call the project shows runs it with autograd off (`FunctionInfo.grad_off_caller`).
    grad_off_caller: bool = False

    def merge(self, other: FunctionFacts) -> FunctionFacts:
        return FunctionFacts(
            self.trains or other.trains,
            self.has_step_loop or other.has_step_loop,
            max(self.heat, other.heat),
            self.steps or other.steps,
            self.accelerated or other.accelerated,
            other.trace if other.heat > self.heat else self.trace,
            self.bound if self.bound == other.bound else (),
            self.returns if self.returns == other.returns else None,
            self.routes if self.routes == other.routes else (),
            self.opt_in if self.opt_in == other.opt_in else (),
            self.reads_params if self.reads_params == other.reads_params else (),
            self.returns_read if self.returns_read == other.returns_read else (),
            self.fp32_backward or other.fp32_backward,
            self.reads_clock or other.reads_clock,
            self.returned_at if self.returned_at == other.returned_at else (),
            self.grad_off_caller or other.grad_off_caller,
        )


class _Resolver:
    """The fixed point: which functions train, which loops are step/epoch loops, how hot each function is."""

    def __init__(
        self, functions, module_loops, module_calls, external: Mapping[str, FunctionFacts], whole_project: bool = False,
    ) -> None:
        self.functions: list[FunctionInfo] = functions
        self.module_loops: list[LoopInfo] = module_loops
        self.module_calls: list[CallSite] = module_calls
        self.external = external
        # Every analysed module's calls are here: a function none of them calls is called elsewhere.
        self.whole_project = whole_project
        self.by_key: dict[str, list[FunctionInfo]] = {}
        for fn in functions:
            self.by_key.setdefault(fn.key, []).append(fn)
            known = external.get(fn.key)
            if known is not None:
                fn.trains_transitively = fn.trains_transitively or known.trains
                fn.fp32_backward_transitively = fn.fp32_backward_transitively or known.fp32_backward
                fn.has_step_loop = fn.has_step_loop or known.has_step_loop
                fn.steps_transitively = fn.steps_transitively or known.steps
                fn.accelerated = fn.accelerated or known.accelerated
                if known.heat > fn.heat:
                    fn.heat, fn.outer_trace, fn.heat_site, fn.hook = known.heat, known.trace, None, ""
                if known.opt_in and fn.opt_in_site is None:
                    fn.opt_in_trace = known.opt_in
        # A callee defined under no key of the caller's root, but known under another root's
        # (see `link_across_roots`), is that one. From here on a call's `callee` is the key its
        # target is known by (the project pass linked them before this resolver was made).
        if external:
            for fn in functions:
                known = external.get(fn.key)
                if known is not None and known.routes:
                    self._follow_routes(fn, known.routes)
            for site in [*module_calls, *(site for fn in functions for site in fn.calls)]:
                site.callee = resolve_key(site.callee, self.by_key, external)

    def _follow_routes(self, fn: FunctionInfo, routes: tuple) -> None:
        """Bind `fn`'s calls through a receiver to what the project pass found they run, so a
        re-analysis sees the loop that calls `step_fn(batch)` call the training step too."""
        for site in list(fn.calls):
            targets = [key for via, key in routes if via == site.via] if site.via is not None else ()
            for index, key in enumerate(targets):
                bound = site if index == 0 else another_target(site)
                bound.callee, bound.foreign = key, key not in self.by_key

    def run(self) -> None:
        """Training flags first; then loop kinds and step loops together; then heat down the calls.

        The last two are sweeps in a fixed order (the first evidence found is kept for the
        trace, so the order is part of the result). A sweep looks again only at what read a
        value that changed since it was last looked at: anything else would come out as it is.
        """
        # A function's flags are read by its callers; its heat and device by its callees.
        callees = {id(fn): list(self._local_callees(fn.calls)) for fn in self.functions}
        callers: dict[int, list[FunctionInfo]] = {}
        for fn in self.functions:
            for callee in callees[id(fn)]:
                callers.setdefault(id(callee), []).append(fn)
        self._propagate_training(callers)
        self._find_step_loops(callers)
        if self.whole_project:
            self._steps_nobody_here_calls()
        sites_by_key: dict[str, list[CallSite]] = {}
        for site in self.module_calls + [site for fn in self.functions for site in fn.calls]:
            sites_by_key.setdefault(site.callee, []).append(site)
        self._spread_heat(callees, sites_by_key)
        if self.whole_project:
            self._only_opted_in(sites_by_key)
        self._grad_off_callers()

    def _grad_off_callers(self) -> None:
        """The functions some call runs with autograd off: at a call made under `no_grad()` (or
        in a function decorated with it), and everything such a function calls, across the
        project; a file analysed again starts from what the project pass found."""
        reached: set[int] = set()
        pending: list[CallSite] = []
        for fn in self.functions:
            # Found again from the calls on every pass: nothing an earlier pass concluded stays.
            known = self.external.get(fn.key)
            fn.grad_off_caller = known is not None and known.grad_off_caller
            if fn.grad_off_caller:
                reached.add(id(fn))
                pending.extend(fn.calls)
        pending.extend(site for site in self.module_calls if site.grad_off)
        pending.extend(site for fn in self.functions for site in fn.calls if site.grad_off)
        while pending:
            site = pending.pop()
            for fn in self._targets(site.callee)[0] or ():
                if id(fn) not in reached:
                    fn.grad_off_caller = True
                    reached.add(id(fn))
                    pending.extend(fn.calls)

    def _only_opted_in(self, sites_by_key: dict[str, list[CallSite]]) -> None:
        """Functions every call of which, across the project, runs under an opt-in setting (a
        command-line or config default keeps the branch off), directly or through callers that
        are themselves opt-in only. A function nobody here calls is not: who calls it is unknown."""
        changed = True
        while changed:
            changed = False
            for fn in self.functions:
                if fn.opt_in_site is not None:
                    continue
                # Its calls of itself say nothing of how it is reached.
                sites = [site for site in sites_by_key.get(fn.key, ()) if site.where.function is not fn]
                if sites and all(_opted_in_site(site) for site in sites):
                    fn.opt_in_site, changed = sites[0], True

    def _steps_nobody_here_calls(self) -> None:
        """A function that is one training step (a backward pass, then an optimizer step outside
        any loop of its own) runs once per step whoever calls it. When no analysed code calls it
        (an Ignite `Engine(train_step)`, a trainer's hook, a caller outside the project), its body
        is step code; a caller the project does show decides instead (a full-batch epoch loop)."""
        called = {site.callee for site in self.module_calls} | {site.callee for fn in self.functions for site in fn.calls}
        for fn in self.functions:
            if _is_a_test(fn):
                continue  # pytest calls each test once: one step of training, on purpose
            if fn.steps_transitively and fn.backward_transitively and fn.heat is Heat.ONCE and fn.key not in called:
                # Inferred from what the function does, not shown by a caller: an assumed premise.
                fn.heat, fn.hook_inferred = Heat.STEP, True
                fn.hook = (
                    f"step function: {fn.key.rsplit('.', 1)[-1]}() does a backward pass and then the optimizer step,"
                    " and no code analysed here calls it"
                )

    def _find_step_loops(self, callers: dict[int, list[FunctionInfo]]) -> None:
        functions = self.functions
        all_loops = self.module_loops + [loop for fn in functions for loop in fn.loops]
        # A function that reads a clock to log while it updates weights is a training function.
        timing_loops = {id(loop) for fn in functions if fn.timing and not fn.updates for loop in fn.loops}
        innermost_first = _innermost_first(all_loops)
        # Who reads what may change here: a loop reads its nested loops' kinds and its callees'
        # `has_step_loop`; a function reads its loops' kinds and its callers read its `has_step_loop`.
        function_readers_of_loop: dict[int, list[FunctionInfo]] = {}
        loop_readers_of_function: dict[int, list[LoopInfo]] = {}
        for loop in all_loops:
            for callee in self._local_callees(loop.calls):
                loop_readers_of_function.setdefault(id(callee), []).append(loop)
        for fn in functions:
            for loop in fn.loops:
                function_readers_of_loop.setdefault(id(loop), []).append(fn)
        stale_loops = {id(loop) for loop in all_loops}
        stale_functions = {id(fn) for fn in functions}
        for _ in range(len(functions) + 2):
            changed = False
            for loop in innermost_first:
                if id(loop) not in stale_loops:
                    continue
                stale_loops.discard(id(loop))
                was_step = loop.is_step
                self._classify(loop, id(loop) in timing_loops)
                if loop.is_step != was_step:
                    # Every loop it is nested in reads it, at any depth (`_first_step`).
                    outer = loop.parent
                    while outer is not None:
                        stale_loops.add(id(outer))
                        outer = outer.parent
                    stale_functions.update(id(fn) for fn in function_readers_of_loop.get(id(loop), ()))
            for fn in functions:
                if id(fn) not in stale_functions:
                    continue
                stale_functions.discard(id(fn))
                has_step = fn.has_step_loop or any(loop.is_step for loop in fn.loops) or any(
                    self._callee_has_step_loop(site) for site in fn.calls
                )
                if has_step != fn.has_step_loop:
                    fn.has_step_loop, changed = has_step, True
                    stale_loops.update(id(loop) for loop in loop_readers_of_function.get(id(fn), ()))
                    stale_functions.update(id(reader) for reader in callers.get(id(fn), ()))
            if not changed:
                break

    def _spread_heat(self, callees: dict[int, list[FunctionInfo]], callers_by_key: dict[str, list[CallSite]]) -> None:
        functions = self.functions
        stale = {id(fn) for fn in functions}
        changed = True
        while changed:
            changed = False
            for fn in functions:
                if fn.memoised or id(fn) not in stale:
                    continue
                stale.discard(id(fn))
                callers = callers_by_key.get(fn.key, ())
                heat, hottest = Heat.ONCE, None
                for site in callers:
                    site_heat = _site_heat(site, fn.steps_transitively)
                    if site_heat > heat:
                        heat, hottest = site_heat, site
                if fn.evaluates and not fn.trains_transitively:
                    heat = min(heat, Heat.EVAL)  # an evaluation function is as hot as an eval batch
                moved = False
                if heat > fn.heat:
                    fn.heat, fn.heat_site, fn.outer_trace, moved = heat, hottest, (), True
                if not fn.accelerated and any(_site_accelerated(site) for site in callers):
                    fn.accelerated = moved = True
                if moved:
                    changed = True
                    stale.update(id(callee) for callee in callees[id(fn)])

    def _classify(self, loop: LoopInfo, in_timing_function: bool) -> None:
        # The evidence is kept (first nested step loop, first call that decides) for the trace.
        nested_step = next((found for nested in loop.nested if (found := _first_step(nested)) is not None), None)
        # A benchmark's measuring routine has a timed loop, not training: a loop that calls it
        # once per configuration is a sweep, not an epoch loop around a step loop.
        step_site = None if nested_step is not None else next(
            (site for site in loop.calls if self._callee_has_step_loop(site) and not self._callee_only_measures(site)),
            None,
        )
        contains_step = nested_step is not None or step_site is not None
        train_site = None if loop.trains else next((site for site in loop.calls if self._callee_trains(site)), None)
        loop.fp32_backward_call = any(
            site.where.innermost_loop is loop and self._callee_fp32_backward(site) for site in loop.calls
        )
        # `fw_timer.tic()` ... `fw_timer.toc()`: a clock read in a timer's method is the loop's own.
        loop.reads_clock = loop.reads_clock or any(
            site.where.innermost_loop is loop and self._callee_reads_clock(site) for site in loop.calls
        )
        trains = loop.trains or train_site is not None
        if loop.retry or loop.over_optimizers:
            loop.is_step = loop.is_epoch = loop.is_eval = loop.full_batch = False
            return
        timing_step = in_timing_function and loop.tensor_work and not loop.has_nested_loop
        # `while True: batch = next(data); run_step(batch)`: the update happens in a callee, once
        # per iteration of this loop, even when a micro-batch loop inside the callee trains too.
        step_call = None if loop.steps_here else next(
            (site for site in loop.calls if site.where.innermost_loop is loop and self._callee_steps(site)), None
        )
        steps_here = loop.steps_here or step_call is not None
        # A loop over listed settings whose callee trains (`for hook in [NO, FP16, BF16]:
        # check_hook(hook)`) runs one whole run per setting: a sweep around the training, not steps.
        sweep = loop.over_listed and train_site is not None and not steps_here
        loop.is_step = not sweep and (steps_here or timing_step or (trains and not contains_step))
        # An RL rollout (`for step in range(num_steps): ...; envs.step(action)`) inside the loop
        # that trains on what it collects runs as often as training does, not per eval interval.
        loop.rollout = not loop.is_step and bool(loop.environment_step) and any(outer.trains for outer in _ancestors(loop))
        loop.is_step = loop.is_step or loop.rollout
        # Full-batch training (`for epoch in range(n): train(); test()`): a loop over no data
        # source that updates and evaluates every iteration takes one step per epoch.
        loop.full_batch = loop.is_step and not timing_step and not loop.data_source and self._evaluates_each_iteration(loop)
        if loop.full_batch:
            loop.is_step = False
        loop.is_epoch = not loop.is_step and (contains_step or loop.full_batch or sweep)
        # A loop that calls a benchmark's measuring routine (a timing function with its own
        # loop) runs one measurement per configuration: a sweep, not an evaluation over batches.
        forward_site = None if loop.forward else next(
            (site for site in loop.calls if self._callee_forwards(site) and not self._callee_measures(site)), None
        )
        # A loop that only calls something that runs the model is an evaluation over batches when
        # it iterates a data source; over weight files, export formats or configs it is a sweep.
        runs_model = (loop.forward or (forward_site is not None and loop.data_source)) and not loop.in_forward
        # A loop over the parts of one batch in the step's own body (crops, clips, chunks) runs
        # the model as part of that step, not as an evaluation over batches.
        part_of_step = not loop.data_source and any(outer.steps_here for outer in _ancestors(loop))
        # A loop that calls an evaluation with its own loop over batches (`for name, iterator in
        # validation_sets: results = evaluate(model, iterator)`) runs one evaluation per
        # iteration: its reads of the results are per evaluation, not per batch.
        over_evaluations = any(self._callee_evaluates_over_batches(site) for site in loop.calls)
        # In a method of a model (its class defines `forward`), tensor work over a counter is part
        # of that method's one call (label propagation, a loss over parts); iterating a data
        # source (layer-wise inference over a loader) or running a model makes it an evaluation.
        in_model_method = (
            bool(loop.sibling_forward) and loop.sibling_forward in self.by_key and not loop.header.startswith("iterates ")
        )
        ruled_out = (
            loop.is_step or contains_step or trains or loop.in_forward or part_of_step or over_evaluations
            or loop.over_rows
        )
        loop.is_eval = not ruled_out and (
            runs_model or (loop.data_source and loop.tensor_work and not in_model_method)
        )
        loop.because_loop = nested_step if contains_step else None
        loop.steps_in_call = step_call is not None
        if loop.is_step:
            loop.because_site = step_call if step_call is not None else (
                None if loop.steps_here or timing_step else train_site
            )
        elif loop.is_epoch:
            loop.because_site = step_site
        else:
            loop.because_site = forward_site if loop.is_eval else None

    def _propagate_training(self, callers: dict[int, list[FunctionInfo]]) -> None:
        """Which functions train, run a model and step an optimizer, directly or through callees.

        The flags only ever turn on, so this is a least fixed point: a function is looked at
        again only when one of the functions it calls changed (a worklist over the reversed call
        edges), not in repeated sweeps over every function of the project.
        """
        pending = list(reversed(self.functions))
        queued = {id(fn) for fn in pending}
        while pending:
            fn = pending.pop()
            queued.discard(id(fn))
            if not self._update_training(fn):
                continue
            for caller in callers.get(id(fn), ()):
                if id(caller) not in queued:
                    queued.add(id(caller))
                    pending.append(caller)

    def _update_training(self, fn: FunctionInfo) -> bool:
        """Re-derive `fn`'s transitive flags from its own calls; True if one turned on."""
        changed = False
        if not fn.trains_transitively and (fn.trains or any(self._callee_trains(s) for s in fn.calls)):
            fn.trains_transitively = changed = True
        if not fn.forwards_transitively and (
            fn.forward or any(self._callee_forwards(s) for s in fn.calls if not s.where.loops)
        ):
            fn.forwards_transitively = changed = True
        if not fn.steps_transitively and (
            fn.steps or any(self._callee_steps(s) for s in fn.calls if not s.where.loops)
        ):
            fn.steps_transitively = changed = True
        if not fn.fp32_backward_transitively and (
            fn.fp32_backward or any(self._callee_fp32_backward(s) for s in fn.calls if not s.where.loops)
        ):
            fn.fp32_backward_transitively = changed = True
        if not fn.backward_transitively and (
            fn.backward or any(
                callee.backward_transitively for site in fn.calls if not site.where.loops
                for callee in self.by_key.get(site.callee, ())
            )
        ):
            fn.backward_transitively = changed = True
        return changed

    def _evaluates_each_iteration(self, loop: LoopInfo) -> bool:
        """An unconditional call in `loop`'s own body to a function that puts the model in eval mode."""
        for site in loop.calls:
            if site.where.innermost_loop is loop and not site.guarded and site.condition is None:
                if any(fn.evaluates for fn in self.by_key.get(site.callee, ())):
                    return True
        return False

    def _local_callees(self, calls: list[CallSite]) -> Iterator[FunctionInfo]:
        """The project's functions these calls reach."""
        for site in calls:
            yield from self.by_key.get(site.callee, ())

    def _targets(self, callee: str) -> tuple[list[FunctionInfo] | None, FunctionFacts | None]:
        """The project's functions a call's key names, else what other runs know of it."""
        return self.by_key.get(callee), self.external.get(callee)

    def _callee_has(self, site: CallSite, flag: str, known_as: str) -> bool:
        """A flag of the function `site` calls: its own (`FunctionInfo.<flag>`) when it is analysed
        here, else what the project pass says of it (`FunctionFacts.<known_as>`)."""
        local, known = self._targets(site.callee)
        if local:
            return any(getattr(fn, flag) for fn in local)
        return known is not None and getattr(known, known_as)

    def _callee_trains(self, site: CallSite) -> bool:
        return self._callee_has(site, "trains_transitively", "trains")

    def _callee_reads_clock(self, site: CallSite) -> bool:
        return self._callee_has(site, "reads_clock", "reads_clock")

    def _callee_fp32_backward(self, site: CallSite) -> bool:
        return self._callee_has(site, "fp32_backward_transitively", "fp32_backward")

    def _callee_steps(self, site: CallSite) -> bool:
        return self._callee_has(site, "steps_transitively", "steps")

    def _callee_forwards(self, site: CallSite) -> bool:
        local = self._targets(site.callee)[0]
        return bool(local) and any(fn.forwards_transitively for fn in local)

    def _callee_measures(self, site: CallSite) -> bool:
        return any(fn.timing and fn.loops for fn in self._targets(site.callee)[0] or ())

    def _callee_only_measures(self, site: CallSite) -> bool:
        """Every function the call reaches times a loop and trains nowhere (a benchmark routine)."""
        local = self._targets(site.callee)[0]
        return bool(local) and all(fn.timing and fn.loops and not fn.trains_transitively for fn in local)

    def _callee_evaluates_over_batches(self, site: CallSite) -> bool:
        """`evaluate(model, iterator)` that puts the model in eval mode and loops over batches."""
        return any(fn.evaluates and fn.loops for fn in self._targets(site.callee)[0] or ())

    def _callee_has_step_loop(self, site: CallSite) -> bool:
        local, known = self._targets(site.callee)
        if local:
            return any(fn.has_step_loop for fn in local)
        return known is not None and known.has_step_loop


def resolve_project(models: list[HeatModel]) -> dict[str, FunctionFacts]:
    """One fixed point over every analysed module: heat crosses imports between them."""
    functions = [fn for model in models for fn in model.functions]
    module_loops = [loop for model in models for loop in model.module_loops]
    module_calls = [site for model in models for site in model.module_calls]
    link_across_roots(functions, [*module_calls, *(site for fn in functions for site in fn.calls)], project_reexports(models))
    _Resolver(functions, module_loops, module_calls, {}, whole_project=True).run()
    facts = project_facts(models)
    stepping = frozenset(key for key, known in facts.items() if known.steps)
    for model in models:
        # A rule asked whether a callee steps, and the project says it does: judged again.
        model.steps_answered = any(resolve_key(key, facts) in stepping for key in model.asked_steps)
    return facts


def project_facts(models: list[HeatModel]) -> dict[str, FunctionFacts]:
    """What the resolved modules say about each function, heat traces included."""
    functions = [fn for model in models for fn in model.functions]
    facts: dict[str, FunctionFacts] = {}
    for fn in functions:
        mine = FunctionFacts(
            fn.trains_transitively, fn.has_step_loop, fn.heat, fn.steps_transitively, fn.accelerated,
            function_trace(fn), fn.bound, fn.returns, fn.routes, opted_in(fn),
            # A method is called through its instance (`runner.log(loss)`): `self` is no argument.
            tuple((name, fn.order.index(name) - fn.method if name in fn.order else -1) for name in fn.reads_params),
            fn.returns_read,
            fn.fp32_backward_transitively,
            fn.reads_clock,
            fn.returned_at,
            fn.grad_off_caller,
        )
        facts[fn.key] = facts[fn.key].merge(mine) if fn.key in facts else mine
    # What a file's own re-analysis needs to follow the same cross-root links.
    facts.update((ELSEWHERE + dotted, facts[key]) for dotted, key in defined_once(fn.key for fn in functions).items())
    return facts


_UNSEEN = object()

# Key prefix of a function known under exactly one import root, for callers under another root.
ELSEWHERE = "*:"
LIBRARY_ROOTS = frozenset({"torch", "numpy", "np", "os", "sys", "math", "time"})


def root_token(import_root: str) -> str:
    """A short dot-free name for an import root (dots would read as module separators)."""
    return hashlib.sha256(import_root.encode("utf-8", "surrogateescape")).hexdigest()[:12] if import_root else ""


def unrooted(key: str) -> str:
    return key.partition(":")[2] or key


def defined_once(keys: Iterable[str]) -> dict[str, str]:
    """The dotted names defined under exactly one import root, with their keys."""
    roots_of: dict[str, set[str]] = {}
    for key in keys:
        roots_of.setdefault(unrooted(key), set()).add(key)
    return {dotted: next(iter(keys)) for dotted, keys in roots_of.items() if len(keys) == 1}


def _spellings(callee: str) -> list[str]:
    """The dotted names a callee may be known by elsewhere: its own, then (for `util.misc.f`
    imported through a folder without `__init__.py`, a namespace package keyed `misc`) each
    shorter `module.function` suffix. Library names are only ever themselves."""
    dotted = unrooted(callee)
    parts = dotted.split(".")
    if parts[0] in LIBRARY_ROOTS:
        return [dotted]
    return [dotted, *(".".join(parts[start:]) for start in range(1, len(parts) - 1))]


def defined_under(callee: str, unique: Mapping[str, str]) -> str | None:
    """The key of the one definition (`unique`, from `defined_once`) that a spelling of `callee`
    names, else None."""
    return next((unique[name] for name in _spellings(callee) if name in unique), None)


def project_reexports(models: list[HeatModel]) -> dict[str, str]:
    """Every package's re-exported names (`HeatModel.reexports`), across the project. A name one
    package re-exports under exactly one import root is that name seen from every root too:
    `from model import FastSpeech2` in `utils/model.py`, a folder of its own without
    `__init__.py`, names the `model` package beside it (as `link_across_roots` links functions)."""
    found: dict[str, str] = {}
    for model in models:
        found.update(model.reexports())
    targets: dict[str, set[str]] = {}
    for alias, target in found.items():
        targets.setdefault(unrooted(alias), set()).add(target)
    roots = {model.root for model in models}
    for dotted, named in targets.items():
        if len(named) == 1:
            target = next(iter(named))
            for root in roots:
                found.setdefault(f"{root}:{dotted}" if root else dotted, target)
    return found


def through_reexports(key: str, reexports: Mapping[str, str]) -> str:
    """`key` with a re-exported prefix replaced by what it names, through chains of packages
    (`pkg.Loss.forward` -> `pkg.losses.Loss.forward` -> `pkg.losses.focal.Loss.forward`)."""
    for _ in range(8):  # a package that re-exports itself in a cycle stops here
        head, rest = key, ""
        while head and head not in reexports:
            head, _, tail = head.rpartition(".")
            rest = f"{tail}.{rest}" if rest else tail
        if not head:
            return key
        key = f"{reexports[head]}.{rest}" if rest else reexports[head]
    return key


def link_across_roots(functions: list[FunctionInfo], sites: list[CallSite], reexports: Mapping[str, str]) -> None:
    """Point each call at the function it names when its key is no definition's: a name a package
    re-exports (`through_reexports`), or `from pkg.engine import step` in scripts/train.py, a script
    folder of its own, naming the package module beside it: the one function defined with that
    dotted name (or the longest suffix of it) under another root. Two candidates (two `main.py` in
    two script folders): no link, since guessing would share heat between unrelated scripts."""
    unique = defined_once(fn.key for fn in functions)
    defined = {fn.key for fn in functions}
    for site in sites:
        if site.callee not in defined:
            named = through_reexports(site.callee, reexports)
            key = named if named in defined else defined_under(named, unique)
            if key is not None:
                site.callee = key


def resolve_key(callee: str, *known: Container[str]) -> str:
    """The key under which `callee` is known in `known` (tables or sets of keys): itself, else
    the project's link to another root (`ELSEWHERE` entries, see `link_across_roots`)."""
    if any(callee in table for table in known):
        return callee
    for name in _spellings(callee):
        if any(ELSEWHERE + name in table for table in known):
            return ELSEWHERE + name
    return callee


def absolute_name(name: str, module: str) -> str:
    """`.utils.helper` imported in `pkg.train` is `pkg.utils.helper`."""
    if not name.startswith("."):
        return name
    dots = len(name) - len(name.lstrip("."))
    package = module.split(".")[:-1]
    base = package[: len(package) - (dots - 1)] if dots > 1 else package
    return ".".join([*base, name.lstrip(".")]) if base else name.lstrip(".")


_RETRIED_ERRORS = frozenset({"RuntimeError", "OutOfMemoryError", "Exception", "MemoryError"})


def _is_retry_loop(node: cst.For | cst.While) -> bool:
    """A loop whose body is a `try` that leaves the loop on success (return/break) and catches
    out-of-memory errors: the batch-size back-off pattern."""
    body = node.body.body if type(node.body) is cst.IndentedBlock else ()
    for statement in body:
        if type(statement) is not cst.Try:
            continue
        catches = {terminal_name(h.type) for h in statement.handlers if h.type is not None}
        leaves = any(type(n) in (cst.Return, cst.Break) for n in iter_descendants(statement.body))
        if leaves and catches & _RETRIED_ERRORS:
            return True
    return False


def _iterates_tensor_rows(node: cst.For | cst.While) -> bool:
    """`for i in range(x.shape[0])` / `range(x.size(0))`: a loop over the rows of a tensor in
    hand. A dataset has no shape; `range(len(dataset))` is not one of these."""
    if type(node) is not cst.For or type(node.iter) is not cst.Call or dotted_name(node.iter.func) != "range":
        return False
    arguments = node.iter.args
    if not arguments or len(arguments) > 2:
        return False
    bound = arguments[-1].value
    if type(bound) is cst.Subscript:
        return type(bound.value) is cst.Attribute and bound.value.attr.value == "shape"
    return type(bound) is cst.Call and type(bound.func) is cst.Attribute and bound.func.attr.value == "size" and len(bound.args) == 1


def _first_step(loop: LoopInfo) -> LoopInfo | None:
    """`loop` or the first loop nested in it (in source order) that is a step loop."""
    if loop.is_step:
        return loop
    return next((found for nested in loop.nested if (found := _first_step(nested)) is not None), None)


def _shown_call(call: cst.Call) -> str:
    """`optimizer.step()`, `scaler.step()`, `backward()` (on an expression): a call as a reader knows it."""
    name = dotted_name(call.func) or method_name(call) or "…"
    return f"{name}()"


def _innermost_first(loops: list[LoopInfo]) -> list[LoopInfo]:
    def depth(loop: LoopInfo) -> int:
        d = 0
        while loop.parent is not None:
            loop, d = loop.parent, d + 1
        return d

    return sorted(loops, key=depth, reverse=True)


def _variables(node: cst.CSTNode) -> set[str]:
    """The variables an expression reads: its names, not the attribute names after a dot."""
    if type(node) is cst.Name:
        return {node.value}
    if type(node) is cst.Attribute:
        return _variables(node.value)
    found: set[str] = set()
    for child in node.children:
        found |= _variables(child)
    return found


def _identifiers(node: cst.CSTNode) -> list[str]:
    names = [node.value] if type(node) is cst.Name else []
    names += [n.value for n in iter_descendants(node) if type(n) is cst.Name]
    return names


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    found = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            found.append(star)
    return found
