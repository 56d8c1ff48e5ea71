"""Calls to standard-library style loggers, and the level they log at (VP502).

`logging.debug(...)`, `logger.info(...)`, `self.log.warning(...)`, `logger.log(logging.DEBUG,
...)`: the logger decides to drop a record only after Python has evaluated every argument, so
whatever the arguments compute is paid whether or not the record is emitted.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.names import ImportTable, dotted_name, method_name, positional_arg, receiver, terminal_name

LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "fatal"})
_LOGGER_OWNERS = frozenset({"log", "logging", "_log", "_logger", "LOG", "LOGGER"})


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
    if "logger" in owner.lower() or owner in _LOGGER_OWNERS:
        return _level_of(call, method)
    return None


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
