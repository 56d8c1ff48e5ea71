"""What one hostile case declares: the tree it builds, the command it runs and the outcome the
documentation gives for it. The runner checks every case against the same invariants; a case only
adds what is particular to it (its exit code, the files it may write, what must be found)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.hostile.sandbox import Sandbox

Build = Callable[["Sandbox"], None]

# How the run's standard output is connected.
PIPE, CLOSED, FULL, GONE, DEVNULL = "pipe", "closed", "full", "gone", "devnull"
# Where a report or the cache may go by default.
REPORTS = ("reports/*",)
DEFAULT_CACHE = (".verify_perf_cache/*",)
# The signing key a first run creates in the fake home.
KEY = ("~/.cache/verify-perf/*",)
CACHED = DEFAULT_CACHE + KEY


@dataclass(frozen=True)
class Case:
    category: str
    name: str
    build: Build
    argv: tuple[str, ...]
    # The documented exit code: 0 PASS, 1 BLOCK, 2 usage error; a negative number is death by
    # that signal, only for a case that sends it; None: 0 or 1, whichever the reference run gives.
    exit_code: int | None
    # Patterns (fnmatch, `*` crosses `/`) of what the run may create, change or remove: relative
    # to the project (the working directory), `~/` for the fake home.
    outputs: tuple[str, ...] = ()
    # Patterns of paths that must not change even where `outputs` would allow it (a user's file
    # inside a cache folder).
    protected: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Paths (as the JSON output writes them) that must carry a VP900.
    unanalysable: tuple[str, ...] = ()
    # (path, code) pairs the JSON findings must hold: code that blocks still blocks.
    must_find: tuple[tuple[str, str], ...] = ()
    # Bytes stdout must not hold (an injected workflow command, a terminal escape).
    stdout_lacks: tuple[bytes, ...] = ()
    # When set, refusing the input (exit 2 with this text on stderr) is also documented: for
    # generated inputs that may or may not still be valid (a mutated baseline).
    refusal: str = ""
    # (file, bytes) a file the run writes must not hold.
    written_lacks: tuple[tuple[str, bytes], ...] = ()
    # Text stderr must contain (a clear message), or "" for no check.
    stderr: str = ""
    # The same case without its hostile part (a forged cache, a baseline, lone CRs): the run
    # must give the same exit code and findings.
    reference: Build | None = None
    reference_argv: tuple[str, ...] | None = None
    # True when the reference comparison is about forged data (cache, baseline, record).
    forged: bool = False
    stdout: str = PIPE
    # Working directory, relative to the project (default: the project).
    cwd: str = ""
    # Called in the child just before verify-perf starts (e.g. to delete its working directory).
    preexec: Callable[[], None] | None = None
    # (seconds after the start, signal number) sent to the run.
    interrupt: tuple[float, int] | None = None
    limit: float = 60.0
    # Part of the fast subset the default test run takes.
    fast: bool = False

    @property
    def ident(self) -> str:
        return f"{self.category}/{self.name}"

    @property
    def json_stdout(self) -> bool:
        """Whether stdout carries the JSON result the fail-open checks read."""
        argv = self.argv
        return (self.stdout == PIPE and _value(argv, "--format") == "json" and _value(argv, "-o", "--output") in (None, "-")
                and "--show-settings" not in argv and "--show-files" not in argv and argv[:1] not in (("clean",), ("rule",)))


def _value(argv: tuple[str, ...], *options: str) -> str | None:
    for position, word in enumerate(argv):
        if word in options and position + 1 < len(argv):
            return argv[position + 1]
        for option in options:
            if option.startswith("--") and word.startswith(option + "="):
                return word.split("=", 1)[1]
    return None
