"""VP502 eager-log-format-sync: a log call's arguments read a device tensor before the logger
decides whether to emit the record.

`logger.debug(f"loss {loss.item()}")`, `logging.info("%s" % t)`, `logger.debug("{}".format(t))`,
`logger.debug("%s", t.item())`: Python evaluates the f-string, the `%`/`.format()` and the read
before the call, so the sync happens every step even when the level is off. Passing the tensor
as a lazy argument (`logger.debug("%s", t)`) or testing `logger.isEnabledFor(logging.DEBUG)`
first moves the read behind the level check. Only per-step code and device tensors are
reported; a record at DEBUG (usually off) is MEDIUM, other levels LOW. VP201 reports the read
itself on the same line with its own fix (read at a log interval).
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.guards import GuardedRule
from verifier.static.implicit_syncs import DeviceValues
from verifier.static.logcalls import logging_level, message_args
from verifier.static.names import method_name, receiver, terminal_name
from verifier.static.rule import Invalid
from verifier.static.syncs import sync_of_call
from verifier.static.walk import iter_descendants

_USUALLY_OFF = frozenset({"debug"})
_DEBUG_SWITCH = ("debug", "verbose")


class EagerLogFormatSync(GuardedRule):
    code = "VP502"
    name = "eager-log-format-sync"
    category = Category.SYNC
    # No finding on the real-code set to judge it by yet (see the module docstring).
    preview: ClassVar[bool] = True
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None, eval=None)
    cost = "a log argument formatted, and its tensor read, even when the record is dropped"
    summary = (
        "Finds logging calls whose arguments read a device tensor eagerly in the per-step loop: "
        "`logger.debug(f\"... {t.item()}\")`, `logging.info(\"%s\" % t)`, `.format(t)`, "
        "`logger.debug(\"%s\", t.item())`. DEBUG records (usually off, so all of the cost is "
        "wasted) are MEDIUM."
    )
    why = (
        "Python evaluates a call's arguments before the logger checks its level, so the f-string "
        "and the `.item()` inside it run, and wait for the device, every step, even when DEBUG is "
        "off and the record is thrown away. Measured on CPU with the level off (`pytest -m slow "
        "tests/benchmarks/test_bench_implicit_syncs.py --benchmark-only`, one thread): "
        "`logger.debug(f\"loss {t}\")` of a 0-d tensor median 1.63 us per call, "
        "`logger.debug(\"loss %s\", t)` 0.24 us; on a GPU the eager form also drains the queue."
    )
    example = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    logger.debug(f"step {step} loss {loss.item():.4f}")
"""
    use_instead = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("step %d loss %.4f", step, loss.item())
"""
    fix = (
        "Pass the tensor as a lazy argument (`logger.debug(\"%s\", t)`) or guard the call with "
        "`if logger.isEnabledFor(logging.DEBUG):`."
    )
    tokens = ("log",)
    references = (
        "https://docs.python.org/3/howto/logging.html#optimization",
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._values = context.tracker(DeviceValues)
        # `if logger.isEnabledFor(...)`, `if args.debug:`: the body runs only when logging wants it.
        self._level_checks: list[cst.If] = []

    def visit_If(self, node: cst.If) -> None:
        if _checks_level(node.test):
            self._level_checks.append(node)

    def leave_If(self, node: cst.If) -> None:
        if self._level_checks and self._level_checks[-1] is node:
            self._level_checks.pop()

    def visit_Call(self, node: cst.Call) -> None:
        level = logging_level(node, self.context.imports)
        if level is None or self.guarded or self._level_checks or not self.context.may_use_accelerator:
            return
        read = self._eager_read(node)
        if read is None:
            return
        table = self.severity
        if level in _USUALLY_OFF:
            table = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None, eval=None)
        self.report(
            node,
            f"`{self.context.code_for(node.func)}` evaluates {read} before the level check: the "
            "device is waited for {often}, even when the record is dropped",
            severity=table,
        )

    def _eager_read(self, call: cst.Call) -> str | None:
        facts, imports = self.context.facts, self.context.imports
        for arg in message_args(call):
            for node in (arg.value, *iter_descendants(arg.value)):
                kind = type(node)
                if kind is cst.Call:
                    sync = sync_of_call(node, facts, imports)
                    if sync is not None and self._values.on_device(sync.subject):
                        return f"`{sync.how}` of `{self.context.code_for(sync.subject)}`"
                    if method_name(node) == "format" and _is_text(receiver(node)):
                        found = self._formatted_tensor([a.value for a in node.args])
                        if found:
                            return found
                elif kind is cst.FormattedStringExpression and self._values.on_device(node.expression):
                    return f"an f-string of `{self.context.code_for(node.expression)}`"
                elif kind is cst.BinaryOperation and type(node.operator) is cst.Modulo and _is_text(node.left):
                    operands = node.right.elements if type(node.right) is cst.Tuple else None
                    found = self._formatted_tensor(
                        [e.value for e in operands] if operands is not None else [node.right]
                    )
                    if found:
                        return found
        return None

    def _formatted_tensor(self, values: list[cst.BaseExpression]) -> str | None:
        for value in values:
            if self._values.on_device(value):
                return f"the formatting of `{self.context.code_for(value)}`"
        return None

    VALID = (
        """\
import logging
import torch
logger = logging.getLogger(__name__)
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    logger.debug("step %d loss %s", step, loss)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(f"loss {loss.item():.4f}")
""",
        """\
import logging
import torch
logger = logging.getLogger(__name__)
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        logger.info(f"step {step} loss {loss.item():.4f}")
logger.info(f"final loss {loss.item():.4f}")
""",
        """\
import logging
import torch
logger = logging.getLogger(__name__)
losses = torch.zeros(10)
for step, x in enumerate(loader):
    loss = criterion(model(x), x)
    loss.backward()
    optimizer.step()
    logger.debug(f"loss {loss.item()}")
""",
        """\
import logging
import torch
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    lr = scheduler.get_last_lr()[0]
    logging.debug(f"step {step} lr {lr}")
""",
    )
    INVALID = (
        Invalid(
            """\
import logging
import torch
logger = logging.getLogger(__name__)
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    logger.debug(f"step {step} loss {loss.item():.4f}")
""",
            line=9,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import logging
import torch
device = "cuda"
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    logging.info("loss %s" % loss)
""",
            line=8,
            severity=Severity.LOW,
        ),
    )


def _checks_level(test: cst.BaseExpression) -> bool:
    for node in (test, *iter_descendants(test)):
        if type(node) is cst.Call and method_name(node) == "isEnabledFor":
            return True
        # `if args.debug:`, `if self.verbose:`: a switch for the diagnostics, off in training runs.
        if type(node) in (cst.Name, cst.Attribute) and any(w in (terminal_name(node) or "").lower() for w in _DEBUG_SWITCH):
            return True
    return False


def _is_text(node: cst.BaseExpression | None) -> bool:
    return type(node) in (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
