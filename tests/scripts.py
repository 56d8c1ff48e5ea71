"""Load a file of `scripts/` as a module for a test: the scripts are run as files, not imported
as a package, so a test imports one by path and removes it again afterwards."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@contextmanager
def script_module(name: str) -> Iterator[ModuleType]:
    """`scripts/<name>.py` as module `name`, for the duration of the block."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
