"""The one error type every layer raises for bad input, and the exit codes the gate returns.

Kept apart from the command line so that analysis, configuration and reports can raise a usage
error without importing the argument parser.
"""

from __future__ import annotations

EXIT_PASS, EXIT_BLOCK, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user (path, option, config): one clear line, exit code 2."""
