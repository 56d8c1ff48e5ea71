"""The vocabulary every stage shares: severities, heat, categories and the Finding itself."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field


class Severity(enum.IntEnum):
    """Ordered so that `max()` and comparisons read naturally (CRITICAL is the highest)."""

    INFO = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3
    CRITICAL = 4

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.name for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of {names})") from None


class Heat(enum.IntEnum):
    """How often a statement runs: once per run, once per epoch, once per evaluation batch
    (a loop that runs the model without training it: eval, validation, generation), once per
    training step (an optimizer update, and the micro-batches inside it)."""

    ONCE = 0
    EPOCH = 1
    EVAL = 2
    STEP = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def often(self) -> str:
        """How often the line runs, in the words every output uses: `every step`, `once`."""
        return _OFTEN[self]

    @property
    def where(self) -> str:
        """Where the line runs, for messages that name the loop: `in the per-step loop`."""
        return _WHERE[self]


_OFTEN = {Heat.STEP: "every step", Heat.EVAL: "every evaluation batch", Heat.EPOCH: "every epoch", Heat.ONCE: "once"}
_WHERE = {
    Heat.STEP: "in the per-step loop", Heat.EVAL: "in an evaluation loop", Heat.EPOCH: "in the per-epoch code",
    Heat.ONCE: "here",
}


class Category(str, enum.Enum):
    """Report sections; the value is the heading users read."""

    MEMORY = "Memory management"
    SYNC = "Host-device synchronization"
    DATA = "Data loading"
    AMP = "Mixed precision (AMP)"
    ALGORITHMIC = "Algorithmic complexity"
    GPU = "GPU utilization"
    CONCURRENCY = "Concurrency"
    DISTRIBUTED = "Distributed"
    ANALYSIS = "Analysis"


@dataclass(frozen=True)
class SeverityByHeat:
    """A rule's default severity at each heat; None means "not reported at that heat".

    Evaluation batches run a few times per eval interval, not every step: unless a rule says
    otherwise, a finding there is at most LOW (and not reported where the step severity is None).
    """

    step: Severity | None
    epoch: Severity | None
    once: Severity | None
    eval: Severity | None | str = "capped"

    def at(self, heat: Heat) -> Severity | None:
        if heat is Heat.EVAL:
            if self.eval != "capped":
                return self.eval
            return None if self.step is None else min(self.step, Severity.LOW)
        return {Heat.STEP: self.step, Heat.EPOCH: self.epoch, Heat.ONCE: self.once}[heat]

    def name_at(self, heat: Heat) -> str | None:
        """The severity's name at `heat`, None when not reported (INFO is a severity, not falsy)."""
        severity = self.at(heat)
        return severity.name if severity is not None else None

    @classmethod
    def always(cls, severity: Severity) -> SeverityByHeat:
        return cls(severity, severity, severity, severity)


@dataclass(frozen=True)
class TraceStep:
    """One link of the chain that makes a finding hot, read from the finding outwards: a call
    site (`calls log_metrics()`) or, last, the loop that sets the heat and why it is that kind
    of loop (`step loop: iterates train_loader, calls optimizer.step()`)."""

    path: str
    line: int
    what: str
    # The branch the call runs under within its caller (`args.amp`, `not should_log`) and its
    # kind (`constant`, `cadence`, `throttle`, `once`, `data`); "" when it runs unconditionally.
    branch: str = ""
    branch_kind: str = ""
    # The loop's kind was inferred from weak signals (tensor work timed in a benchmark, tensor
    # work on batches without a model call), not shown by an update or a forward.
    inferred: bool = False
    # For a call made in a loop: the host read of a device tensor the same loop's iteration
    # already makes (`loss.item()`), by its code; "" when none is shown. A wait the callee adds
    # is then a second wait per iteration.
    waits: str = ""

    @property
    def is_loop(self) -> bool:
        return self.what.startswith(LOOP_KINDS)


# How a loop step's `what` starts; the rest, after ": ", says why the loop is of that kind.
LOOP_KINDS = ("step loop: ", "eval loop: ", "epoch loop: ")


class Premise(str, enum.Enum):
    """What a finding rests on (RULES.md, "Evidence standard"); the value is the word users read."""

    COST = "cost"  # the operation costs what the rule says (a host read, a stream sync, a copy)
    VALUE = "value"  # the value is on the accelerator, or carries an autograd graph
    FREQUENCY = "frequency"  # the line runs as often as its severity says
    RULE = "rule"  # the rule's own premise (no unscale_ reaches the clip, no backward frees the graph)


class Status(str, enum.Enum):
    """How well a premise is shown. The weakest premise caps the severity (`cap`)."""

    PROVEN = "proven"  # the code at a named line shows it
    ASSUMED = "assumed"  # likely, not shown (a tensor in a module that moves data to a device)
    UNKNOWN = "unknown"  # not known at all (a branch whose condition depends on the data)

    @property
    def cap(self) -> Severity:
        return _CAPS[self]


_CAPS = {Status.PROVEN: Severity.CRITICAL, Status.ASSUMED: Severity.MEDIUM, Status.UNKNOWN: Severity.LOW}


@dataclass(frozen=True)
class Evidence:
    """One premise of a finding: proven by the code at `path:line`, assumed, or unknown.

    Severity follows the weakest premise: HIGH and CRITICAL only when every premise is proven,
    MEDIUM at most with one assumed, LOW when one is unknown; only a finding whose premises are
    all proven can block a merge.
    """

    premise: Premise
    status: Status
    # What shows it (`loss` is the output of `criterion(...)`), or what is assumed and why.
    text: str
    path: str = ""
    line: int = 0

    @property
    def proven(self) -> bool:
        return self.status is Status.PROVEN


@dataclass(frozen=True)
class Edit:
    """Replace the code of one syntax node (a libcst class named `kind`) spanning `line:column` to
    `end_line:end_column` (1-based columns, end exclusive), which reads `original`, with
    `replacement`. Plain data, so that an offered fix travels through worker processes and the cache."""

    kind: str
    line: int
    column: int
    end_line: int
    end_column: int
    original: str
    replacement: str


@dataclass(frozen=True)
class Autofix:
    """The change `--fix` can make for a finding: its edits, all applied or none. A safe fix keeps
    the code's behaviour; an unsafe one may change it and is applied only with `--unsafe-fixes`."""

    title: str
    safe: bool
    edits: tuple[Edit, ...]

    @property
    def applicability(self) -> str:
        """`safe` or `unsafe`, the words ruff's JSON uses."""
        return "safe" if self.safe else "unsafe"

    def applies(self, unsafe_fixes: bool) -> bool:
        """Applied in this run: safe fixes always, unsafe ones when `--unsafe-fixes` allows them."""
        return self.safe or unsafe_fixes

    def to_dict(self) -> dict:
        return {
            "applicability": self.applicability,
            "message": self.title,
            "edits": [
                {"line": e.line, "column": e.column, "end_line": e.end_line, "end_column": e.end_column,
                 "content": e.replacement}
                for e in self.edits
            ],
        }


@dataclass(frozen=True, order=True)
class Finding:
    """One reported problem at a place in a file. Sorted by path, position, then code."""

    path: str
    line: int
    column: int
    code: str
    end_line: int = 0
    end_column: int = 0
    name: str = field(default="", compare=False)
    severity: Severity = field(default=Severity.INFO, compare=False)
    category: Category = field(default=Category.ANALYSIS, compare=False)
    heat: Heat = field(default=Heat.ONCE, compare=False)
    message: str = field(default="", compare=False)
    source: str = field(default="", compare=False)
    fix: str = field(default="", compare=False)
    # In a notebook: the cell (numbered from 1 over every cell) and the module line it starts
    # on. `line` stays the line in the module the code cells make, which keeps findings in order.
    cell: int | None = field(default=None, compare=False)
    cell_start: int = field(default=0, compare=False)
    # What the dynamic harness saw at this line when it measured the user's entry point:
    # "confirmed at runtime: 2 syncs per step", "not observed at runtime: ...", or "".
    runtime: str = field(default="", compare=False)
    # Why the line runs as often as `heat` says: call sites up to the loop that makes it hot
    # (empty at ONCE heat). Never part of a finding's identity or fingerprint.
    heat_trace: tuple[TraceStep, ...] = field(default=(), compare=False)
    # The premises the finding rests on, each proven or assumed (see `Evidence`).
    evidence: tuple[Evidence, ...] = field(default=(), compare=False)
    # The change `--fix` can make here (`Autofix`), or None when the rule offers none for it.
    autofix: Autofix | None = field(default=None, compare=False)

    @property
    def proven(self) -> bool:
        """Every premise proven: only such a finding may block a merge."""
        return all(item.proven for item in self.evidence)

    @property
    def shown_line(self) -> int:
        """The line a reader looks for: in a notebook, the line within its cell."""
        return self.line - self.cell_start + 1 if self.cell is not None else self.line

    @property
    def shown_end_line(self) -> int:
        end = max(self.line, self.end_line)
        return end - self.cell_start + 1 if self.cell is not None else end

    @property
    def place(self) -> str:
        """`path:line`, or `notebook.ipynb:cell N:line`: where a reader finds the finding."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.shown_line}"

    @property
    def location(self) -> str:
        """`path:line:col`, or `notebook.ipynb:cell N:line:col` (line within the cell), as ruff writes them."""
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:{self.shown_line}:{self.column}"
        return f"{self.path}:{self.line}:{self.column}"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["line"], data["end_line"] = self.shown_line, self.shown_end_line if self.end_line else 0
        del data["cell_start"]
        data["severity"] = self.severity.name
        data["category"] = self.category.value
        data["heat"] = self.heat.label
        data["heat_trace"] = [asdict(step) for step in self.heat_trace]
        data["evidence"] = [
            {"premise": item.premise.value, "status": item.status.value, "text": item.text, "path": item.path,
             "line": item.line}
            for item in self.evidence
        ]
        data["proven"] = self.proven
        data["autofix"] = self.autofix.to_dict() if self.autofix is not None else None
        return data
