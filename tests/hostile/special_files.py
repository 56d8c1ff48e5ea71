"""Special files where Python files are expected: FIFOs, sockets, devices, links to them,
dangling links and link loops, folders that link to their parents, empty and BOM-only files,
sparse giants, notebooks that are not notebooks, and paths that are not files at all. Each `*.py`
that is not a regular file is a VP900 and never read (a FIFO would block, a device stream
forever); a special file named directly that is not a `*.py` is a usage error; beside them the
blocking train.py still blocks."""

from __future__ import annotations

import json
import os
import socket

from tests.hostile.case import CACHED, Case
from tests.hostile.sandbox import Sandbox
from tests.hostile.sources import TRAIN
from tests.hostile.trees import JSON, combine, files, link

CATEGORY = "special-files"


def _fifo(name: str):
    return lambda sandbox: os.mkfifo(sandbox.path(name))


def _socket(name: str):
    def build(sandbox: Sandbox) -> None:
        path = sandbox.path(name)
        server = socket.socket(socket.AF_UNIX)
        # A socket's path is limited to about 100 bytes: bind from its folder.
        cwd = os.getcwd()
        os.chdir(path.parent)
        try:
            server.bind(path.name)
        finally:
            os.chdir(cwd)
            server.close()

    return build


def _sparse(name: str, size: int):
    def build(sandbox: Sandbox) -> None:
        with open(sandbox.path(name), "wb") as handle:
            handle.write(b"import torch\n")
            handle.truncate(size)

    return build


def _notebook(cells) -> str:
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


NOTEBOOKS = {
    "not-json": "{ this is not json",
    "json-list": "[]",
    "cells-not-list": '{"cells": 1}',
    "cell-source-number": _notebook([{"cell_type": "code", "source": 1, "metadata": {}, "outputs": []}]),
    "cell-not-object": _notebook(["x"]),
    "deep-json": '{"cells": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "huge-int": '{"cells": [], "nbformat": ' + "9" * 5000 + "}",
    "kernel-r": json.dumps({"cells": [{"cell_type": "code", "source": TRAIN, "metadata": {}, "outputs": []}],
                            "metadata": {"kernelspec": {"name": "ir", "language": "R"}}, "nbformat": 4}),
    "magics-only": _notebook([{"cell_type": "code", "source": "%%bash\nrm -rf ~\n", "metadata": {}, "outputs": []}]),
    "bom": "\ufeff" + _notebook([]),
    "utf-16": None,
}


def cases() -> list[Case]:
    train = files({"train.py": TRAIN})
    beside = [
        ("fifo-py", _fifo("pipe.py"), ("pipe.py",)),
        ("socket-py", _socket("sock.py"), ("sock.py",)),
        ("link-to-dev-zero", link("zero.py", "/dev/zero"), ("zero.py",)),
        ("link-to-dev-urandom", link("random.py", "/dev/urandom"), ("random.py",)),
        ("link-to-dev-tty", link("tty.py", "/dev/tty"), ("tty.py",)),
        ("link-to-fifo", combine(_fifo("pipe"), link("pipe.py", "pipe")), ("pipe.py",)),
        ("dangling-link", link("gone.py", "nowhere.py"), ("gone.py",)),
        ("link-loop", combine(link("a.py", "b.py"), link("b.py", "a.py")), ("a.py",)),
        ("self-link", link("self.py", "self.py"), ("self.py",)),
        ("link-to-proc", link("proc.py", "/proc/self/environ"), ()),
        ("sparse-1-tib", _sparse("big.py", 1 << 40), ("big.py",)),
        ("sparse-11-mib", _sparse("eleven.py", 11 << 20), ("eleven.py",)),
    ]
    built = []
    for name, build, unanalysable in beside:
        built.append(Case(CATEGORY, f"beside:{name}", combine(train, build), (".", *JSON), 1, outputs=CACHED,
                          unanalysable=unanalysable, must_find=(("train.py", "VP203"),), limit=60,
                          fast=name in ("fifo-py", "sparse-1-tib", "link-to-dev-zero")))
        if unanalysable:
            built.append(Case(CATEGORY, f"named:{name}", combine(train, build), (unanalysable[0], "train.py", *JSON), 1,
                              outputs=CACHED, unanalysable=unanalysable, must_find=(("train.py", "VP203"),), limit=60))
    folders = [
        ("folder-links-to-parent", link("sub/up", ".."), (".",), 1),
        ("folder-links-to-root", link("sub/root", "/"), (".",), 1),
        ("folder-links-to-home", link("sub/home", "@HOME@"), (".",), 1),
        ("folder-link-loop", combine(link("x", "y"), link("y", "x")), (".",), 1),
        ("folder-named-py", files({"pkg.py/inner.py": TRAIN}), (".",), 1),
        ("empty-file", files({"empty.py": ""}), (".",), 1),
        ("bom-only", files({"bom.py": b"\xef\xbb\xbf"}), (".",), 1),
        ("only-newlines", files({"lines.py": "\n" * 100_000}), (".",), 1),
        ("only-crs", files({"crs.py": "\r" * 100_000}), (".",), 1),
        ("unreadable-folder-mode", lambda s: (s.path("locked").mkdir(), os.chmod(s.path("locked"), 0)), (".",), 1),
    ]
    for name, build, paths, code in folders:
        built.append(Case(CATEGORY, f"tree:{name}", combine(train, build), (*paths, *JSON), code, outputs=CACHED,
                          must_find=(("train.py", "VP203"),), limit=60, fast=name == "folder-links-to-parent"))
    named = [
        ("dev-zero", "/dev/zero"), ("dev-null", "/dev/null"), ("dev-stdin", "/dev/stdin"), ("proc-self", "/proc/self/status"),
        ("fifo-not-py", "pipe"), ("empty-path", ""), ("missing", "missing.py"), ("not-python", "README.md"),
        ("trailing-slash-file", "train.py/"), ("nul-in-middle-name", "tr\u2400ain.py"),
    ]
    for name, path in named:
        tree = combine(train, _fifo("pipe"), files({"README.md": "# readme\n"}))
        built.append(Case(CATEGORY, f"named-path:{name}", tree, (path, *JSON), 2, stderr="verify-perf: error:",
                          fast=name == "dev-zero"))
    for name, text in NOTEBOOKS.items():
        data = text.encode() if text is not None else _notebook([]).encode("utf-16")
        built.append(Case(CATEGORY, f"notebook:{name}", combine(train, files({"note.ipynb": data})), (".", *JSON), 1,
                          outputs=CACHED, must_find=(("train.py", "VP203"),),
                          unanalysable=("note.ipynb",) if name in ("not-json", "json-list", "cells-not-list",
                                                                    "cell-source-number", "cell-not-object",
                                                                    "deep-json", "huge-int", "utf-16") else ()))
    notebook_train = _notebook([{"cell_type": "code", "source": TRAIN, "metadata": {}, "outputs": []}])
    built.append(Case(CATEGORY, "notebook:blocking-cells", files({"train.ipynb": notebook_train}), (".", *JSON), 1,
                      outputs=CACHED, must_find=(("train.ipynb", "VP203"),)))
    return built
