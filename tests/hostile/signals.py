"""Signals and time limits. A run interrupted (SIGINT) says so and exits 2; one terminated or
killed dies by that signal; either way no worker is left behind and the report an earlier run
wrote stays whole (written through a temporary file and a rename). Per-file and whole-run time
limits turn what they cut off into a blocking VP900, never a pass, and a time-out is not cached.
The slow file is one the parser takes seconds on (a long `+` chain), so each signal arrives while
the analysis is busy."""

from __future__ import annotations

import signal

from tests.hostile.case import CACHED, Case
from tests.hostile.sandbox import Sandbox
from tests.hostile.sources import TRAIN
from tests.hostile.trees import JSON, files

CATEGORY = "signals"
SLOW = "import torch\nX = " + " + ".join(["x"] * 1800) + "\n"


def _with_earlier_report(sandbox: Sandbox) -> None:
    sandbox.write("train.py", TRAIN)
    sandbox.verify("train.py", "--task", "run", "--no-cache")
    sandbox.write("slow.py", SLOW)


def cases() -> list[Case]:
    built = []
    slow_tree = files({"train.py": TRAIN, "slow.py": SLOW})
    deliveries = {"int": (signal.SIGINT, 2), "term": (signal.SIGTERM, -signal.SIGTERM),
                  "kill": (signal.SIGKILL, -signal.SIGKILL), "hup": (signal.SIGHUP, -signal.SIGHUP)}
    for label, (number, code) in deliveries.items():
        for delay in (0.5, 2.0):
            for jobs in ("1", "2"):
                built.append(Case(CATEGORY, f"sig{label}-after-{delay}s-j{jobs}", _with_earlier_report,
                                  (".", "--task", "run", "-j", jobs, "--no-cache"), code,
                                  interrupt=(delay, number), outputs=("reports/run.md",), limit=60,
                                  stderr="interrupted" if label == "int" else "",
                                  fast=(label, delay, jobs) in {("int", 2.0, "2"), ("kill", 2.0, "2")}))
    limits = [
        ("file-timeout", ("--file-timeout", "0.5"), ("slow.py",)),
        ("run-timeout", ("--run-timeout", "0.5", "-j", "1"), ()),
        ("both-timeouts", ("--file-timeout", "0.3", "--run-timeout", "1"), ("slow.py",)),
    ]
    for name, argv, unanalysable in limits:
        built.append(Case(CATEGORY, name, slow_tree, (".", *JSON, *argv), 1, outputs=CACHED, unanalysable=unanalysable,
                          limit=30, fast=name == "file-timeout"))
        # Warned, not blocked, when the project says so; the time-out is still reported.
        warn = files({"slow.py": SLOW, "pyproject.toml": '[tool.verify-perf]\nunanalysable = "warn"\n'})
        built.append(Case(CATEGORY, f"{name}-warn-only", warn, (".", *JSON, *argv), 0, outputs=CACHED,
                          unanalysable=("slow.py",) if unanalysable else (), limit=30))

    def timed_out_before(sandbox: Sandbox) -> None:
        sandbox.write("slow.py", SLOW)
        sandbox.write("train.py", TRAIN)
        sandbox.verify(".", *JSON, "--file-timeout", "0.3")

    built.append(Case(CATEGORY, "time-out-not-cached", timed_out_before, (".", *JSON), 1, outputs=CACHED,
                      reference=slow_tree, reference_argv=(".", *JSON, "--no-cache"), limit=90))
    built.append(Case(CATEGORY, "smallest-limits", slow_tree, (".", *JSON, "--file-timeout", "0.1", "--run-timeout", "0.1"),
                      1, outputs=CACHED, limit=30))
    for value in ("0", "-1", "nan", "inf", "1e999", "86401", "0.09", "", "1s", "٣"):
        built.append(Case(CATEGORY, f"file-timeout={value!r}", slow_tree, (".", *JSON, "--file-timeout", value), 2,
                          stderr="--file-timeout"))
        built.append(Case(CATEGORY, f"run-timeout={value!r}", slow_tree, (".", *JSON, "--run-timeout", value), 2,
                          stderr="--run-timeout"))
    return built
