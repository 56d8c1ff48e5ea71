"""Which calls log or record a value: one place, so the rules that care agree on it.

Three questions, from narrow to wide:
- `logging_level`: a standard-library style logger call and its level (VP502). `logging.debug(...)`,
  `logger.info(...)`, `self.log.warning(...)`, `logger.log(logging.DEBUG, ...)`: the logger drops a
  record only after Python has evaluated every argument, so what the arguments compute is paid
  whether or not the record is emitted.
- `is_logging_call`: a logger, a tracking backend (`wandb.log`, `mlflow.log_metric(s)`) or a metric
  writer (`add_scalar`, `log_metrics`, tqdm's `set_postfix`) that converts a tensor on the host
  (VP501).
- `records_only`: a call by a name that only records or shows a value (printing, loggers, writers,
  meters, histories), so a value that only reaches it is not needed on the device (VP601).
"""

from __future__ import annotations

import re

import libcst as cst

from verifier.static.names import ImportTable, dotted_name, method_name, positional_arg, receiver, terminal_name

LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "fatal"})
_LOGGER_OWNERS = frozenset({"log", "logging", "_log", "_logger", "LOG", "LOGGER"})
_TRACKING_FUNCTIONS = frozenset({"wandb.log", "mlflow.log_metric", "mlflow.log_metrics"})
_METRIC_WRITER_METHODS = frozenset(
    {"add_scalar", "add_scalars", "add_histogram", "log_metrics", "log_metric", "set_postfix"}
)
_RECORDS = re.compile(
    r"^print|^log$|^log_(?!softmax|prob|sigmoid|det|sum|cosh|normal)|_log$|logger|^write|add_scalar|^update$|"
    r"^append$|^extend$|set_postfix|set_description|^info$|^debug$|^warn|^format$|^str$|^repr$|record|^track",
    re.IGNORECASE,
)


def logging_level(call: cst.Call, imports: ImportTable) -> str | None:
    """The level of a logging call (`"debug"`, ..., `"log"` when given as an argument), else None."""
    method = method_name(call)
    if method not in LEVELS and method != "log":
        return None
    qualified = imports.call_name(call) or ""
    if qualified.startswith("logging."):
        return _level_of(call, method)
    if qualified:
        return None
    owner = terminal_name(receiver(call)) or ""
    if "logger" in owner.lower() or owner in _LOGGER_OWNERS or owner.lower() == "logging":
        return _level_of(call, method)
    return None


def is_logging_call(call: cst.Call, imports: ImportTable) -> bool:
    """A logger, tracking-backend or metric-writer call: it converts a tensor argument on the host."""
    if imports.call_name(call) in _TRACKING_FUNCTIONS or method_name(call) in _METRIC_WRITER_METHODS:
        return True
    return logging_level(call, imports) is not None


def records_only(function_name: str) -> bool:
    """`print`, `log_metrics`, `meter.update`, `history.append`: a name that only records a value."""
    return _RECORDS.search(function_name) is not None


def message_args(call: cst.Call) -> list[cst.Arg]:
    """The arguments Python evaluates for the record: all but `logger.log`'s level."""
    args = [arg for arg in call.args if arg.keyword is None]
    return args[1:] if method_name(call) == "log" else args


def _level_of(call: cst.Call, method: str) -> str:
    if method != "log":
        return method
    first = positional_arg(call, 0)
    spelled = (dotted_name(first.value) or "") if first is not None else ""
    level = spelled.rsplit(".", 1)[-1].lower()
    return level if level in LEVELS else "log"
