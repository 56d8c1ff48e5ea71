"""Small builders the category modules compose: write files, make links, run git."""

from __future__ import annotations

import os
from collections.abc import Callable

from tests.hostile.case import Build
from tests.hostile.sandbox import Sandbox

# A run whose result the runner reads: JSON on stdout, no report file.
JSON = ("--format", "json", "--no-report")


def files(entries: dict[str, str | bytes]) -> Build:
    """Write each file; a name may hold any character a file name can (surrogates for bytes)."""

    def build(sandbox: Sandbox) -> None:
        for name, data in entries.items():
            sandbox.write(name, data)

    return build


def raw_file(name: bytes, data: str | bytes, folder: str = "") -> Build:
    """A file whose name is raw bytes (not UTF-8), in `folder` of the project."""

    def build(sandbox: Sandbox) -> None:
        parent = sandbox.path(folder) if folder else sandbox.project
        parent.mkdir(parents=True, exist_ok=True)
        with open(os.path.join(os.fsencode(parent), name), "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)

    return build


def link(name: str, target: str) -> Build:
    """A symbolic link `name` pointing at `target` exactly as given (made relative or absolute by the caller)."""

    def build(sandbox: Sandbox) -> None:
        path = sandbox.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target.replace("@HOME@", str(sandbox.home)).replace("@PROJECT@", str(sandbox.project))
                   .replace("@ROOT@", str(sandbox.root)), path)

    return build


def run(action: Callable[[Sandbox], None]) -> Build:
    return action


def combine(*builds: Build) -> Build:
    def build(sandbox: Sandbox) -> None:
        for step in builds:
            step(sandbox)

    return build
