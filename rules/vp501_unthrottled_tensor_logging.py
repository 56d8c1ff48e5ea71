"""VP501 unthrottled-tensor-logging: a tensor handed to a logger every step, with no `step % N` guard.

Loggers: `logging.*` and `logger.info/debug/warning/...`, `wandb.log`, `mlflow.log_metric(s)`,
TensorBoard writers' `add_scalar(s)/add_histogram`, `log_metrics`, tqdm's `set_postfix`. The
call must sit in a step loop of its own function, outside any rate-limit guard (see
`verifier.static.guards`), and pass a tensor (directly, in a dict/tuple, `%`-formatted or
`.format()`-ted): the logger converts it on the host, a sync hidden inside the library.

Where the call itself reads the value (`.item()`, `float(t)`, an f-string or `print` of a
tensor), VP201 already reports that line with the same fix (read at a log interval), so VP501
stays silent: one problem, one finding. Python numbers logged every step are not reported
(the sync, if any, was where they were read), nor are Lightning's `self.log` (which keeps
tensors on the device and writes every `log_every_n_steps`), except with `prog_bar=True` in a
Lightning hook: the progress bar converts its metrics to Python numbers at every refresh (every
step by default). Logging helpers called per step are not reported (whether their call sites are
rate-limited is not followed).
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.deferred import deferred
from verifier.static.guards import GuardedRule
from verifier.static.logcalls import is_logging_call
from verifier.static.names import dotted_name, is_true, keyword_arg, method_name, receiver
from verifier.static.rule import Invalid
from verifier.static.syncs import sync_of_call, sync_of_fstring
from verifier.static.walk import iter_descendants

class UnthrottledTensorLogging(GuardedRule):
    code = "VP501"
    name = "unthrottled-tensor-logging"
    category = Category.SYNC
    severity = SeverityByHeat(step=Severity.LOW, epoch=None, once=None)
    cost = "a host read of a tensor value for a log line"
    # Every logger this rule knows is named `log*`/`*logger*`/`logging`, or is one of the writer methods.
    tokens = ("log", "add_scalar", "add_histogram", "set_postfix")
    summary = (
        "Finds tensors passed to a logger (`logger.info`, `wandb.log`, `writer.add_scalar`, "
        "`set_postfix`) every step, outside an `if step % N == 0:` guard, and tensors a Lightning "
        "hook shows on the progress bar (`self.log(..., prog_bar=True)`)."
    )
    why = (
        "Loggers turn a tensor into a number or text on the host, which waits for the device to "
        "finish every queued kernel: a sync hidden in the library, every step. Writing every step "
        "also floods the log and the tracking backend. Logging every N steps costs the same "
        "information at a fraction of the stalls."
    )
    example = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    writer.add_scalar("train/loss", loss, step)
"""
    use_instead = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % log_every == 0:
        writer.add_scalar("train/loss", loss.item(), step)
"""
    fix = "Log every N steps (`if step % log_every == 0:`), or accumulate on the device and log per epoch."
    references = (
        "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        "https://pytorch.org/docs/stable/tensorboard.html",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.guarded:
            return
        if self._lightning_progress_bar_log(node):
            return
        if not is_logging_call(node, self.context.imports):
            return
        values = [value for arg in node.args for value in _logged_values(arg.value)]
        tensors = [value for value in values if self.context.facts.is_tensor(value)]
        if not tensors or self._reads_explicitly(node):
            return
        loops = self.context.heat.where().loops

        def decide() -> SeverityByHeat | None:
            return self.severity if any(loop.is_step for loop in loops) else None

        self.report(
            node,
            f"`{self.context.code_for(node.func)}` gets tensor `{self.context.code_for(tensors[0])}` "
            "every step: the logger converts it on the host (a hidden sync) with no `step % N` guard",
            severity=deferred(decide, outcomes=(self.severity,)),
        )

    def _lightning_progress_bar_log(self, call: cst.Call) -> bool:
        """`self.log("loss", loss, prog_bar=True)` in a Lightning hook: the progress bar reads the
        tensor back at every refresh. Reported at the hook's heat (every step in `training_step`)."""
        if method_name(call) not in ("log", "log_dict") or dotted_name(receiver(call) or call) != "self":
            return False
        prog_bar = keyword_arg(call, "prog_bar")
        function = self.context.heat.where().function
        if prog_bar is None or not is_true(prog_bar.value) or function is None or not function.hook.startswith("Lightning"):
            return False
        values = [value for arg in call.args if arg.keyword is None for value in _logged_values(arg.value)]
        tensors = [value for value in values if self.context.facts.is_tensor(value)]
        if tensors and not self._reads_explicitly(call):
            self.report(
                call,
                f"`self.{method_name(call)}(..., prog_bar=True)` shows tensor `{self.context.code_for(tensors[0])}` "
                f"on the progress bar, which converts it on the host (a hidden sync) at every refresh, {{often}}",
                fix="Leave `prog_bar` off for per-step tensors (the logger still writes every "
                "`log_every_n_steps`), or raise the progress bar's `refresh_rate`.",
            )
        return True

    def _reads_explicitly(self, call: cst.Call) -> bool:
        """A sync VP201 already reports on this line (`.item()`, `float(t)`, f-string of a tensor)."""
        facts, imports = self.context.facts, self.context.imports
        for node in iter_descendants(call):
            if type(node) is cst.Call and sync_of_call(node, facts, imports) is not None:
                return True
            if type(node) is cst.FormattedStringExpression and sync_of_fstring(node, facts) is not None:
                return True
        return False

    VALID = (
        """\
import lightning as L
class LitModel(L.LightningModule):
    def training_step(self, batch):
        logits, loss = self.model(batch["input_ids"], batch["labels"])
        self.log("train_loss", loss)
        return loss
""",
        """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % log_every == 0:
        writer.add_scalar("train/loss", loss, step)
        wandb.log({"loss": loss})
""",
        """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 100 != 0:
        continue
    logger.info("step %d loss %s", step, loss)
""",
        """\
import torch
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    logger.info(f"loss {loss.item():.4f}")
""",
        """\
import torch
for epoch in range(epochs):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    writer.add_scalar("train/loss", loss, epoch)
""",
        """\
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    loss_value = loss.item()
    logger.info("loss %.4f", loss_value)
""",
    )
    INVALID = (
        Invalid(
            """\
import lightning as L
class LitModel(L.LightningModule):
    def training_step(self, batch):
        logits, loss = self.model(batch["input_ids"], batch["labels"])
        self.log("train_loss", loss, prog_bar=True)
        return loss
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    writer.add_scalar("train/loss", loss, step)
""",
            line=5,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import wandb
for batch in train_loader:
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    wandb.log({"loss": loss, "lr": scheduler.get_last_lr()[0]})
""",
            line=6,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import logging
logger = logging.getLogger(__name__)
for step, batch in enumerate(loader):
    loss = model(batch).mean()
    loss.backward()
    if step % 100 == 0:
        logger.info("checkpoint")
    else:
        logger.debug("loss %s", loss)
""",
            line=9,
            severity=Severity.LOW,
        ),
    )


def _logged_values(value: cst.BaseExpression):
    """The values a logging argument formats: dict values, tuple items, `%` and `.format()` operands."""
    if type(value) is cst.Dict:
        for element in value.elements:
            if type(element) is cst.DictElement:
                yield from _logged_values(element.value)
    elif type(value) in (cst.Tuple, cst.List):
        for element in value.elements:
            yield from _logged_values(element.value)
    elif type(value) is cst.BinaryOperation and type(value.operator) is cst.Modulo and _is_text(value.left):
        yield from _logged_values(value.right)
    elif type(value) is cst.Call and method_name(value) == "format" and _is_text(receiver(value)):
        for arg in value.args:
            yield from _logged_values(arg.value)
    elif dotted_name(value) is not None or type(value) in (cst.Call, cst.Subscript, cst.BinaryOperation):
        yield value


def _is_text(node: cst.BaseExpression | None) -> bool:
    return type(node) in (cst.SimpleString, cst.ConcatenatedString)
