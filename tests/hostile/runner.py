"""Run one case and judge it: build its tree, snapshot, run `python -m verifier` in a subprocess
(its own session, so every worker it starts can be found), snapshot again, and check the
invariants of the package docstring. Each failure is classified by harm."""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.hostile.case import CLOSED, DEVNULL, FULL, GONE, PIPE, Case
from tests.hostile.sandbox import Sandbox, differences

DATA_LOSS, FORGED, FAIL_OPEN, INTERNAL, OTHER = "data loss", "trusted forged", "fail-open", "internal error", "other"
KINDS = (DATA_LOSS, FORGED, FAIL_OPEN, INTERNAL, OTHER)
CRASH_TEXTS = ("Traceback (most recent call last)", "internal error", "Exception ignored", "Fatal Python error")
# Seconds a hung run gets past its bound before it is killed.
GRACE = 60.0


@dataclass
class Run:
    returncode: int | None
    stdout: bytes
    stderr: str
    seconds: float
    left_behind: list[int] = field(default_factory=list)


@dataclass
class Outcome:
    case: Case
    run: Run
    failures: list[tuple[str, str]]

    @property
    def passed(self) -> bool:
        return not self.failures

    def describe(self) -> str:
        lines = [f"{self.case.ident}: exit {self.run.returncode} in {self.run.seconds:.1f} s"]
        lines += [f"  {kind}: {detail}" for kind, detail in self.failures]
        if self.failures and self.run.stderr:
            lines.append("  stderr: " + self.run.stderr[-600:].replace("\n", "\n          "))
        return "\n".join(lines)


def run_case(case: Case, folder: Path) -> Outcome:
    sandbox = Sandbox(folder / "case")
    try:
        case.build(sandbox)
    except Exception as error:  # the sweep's own fault, shown as such
        return Outcome(case, Run(None, b"", "", 0.0), [(OTHER, f"the case could not be built: {error!r}")])
    before = sandbox.snapshot()
    run = execute(case, sandbox, case.argv)
    after = sandbox.snapshot()
    refused = bool(case.refusal) and run.returncode == 2 and case.refusal in run.stderr
    failures = _exit_failures(case, run) if not refused else _crash_failures(run)
    failures += _content_failures(case, sandbox)
    failures += _written_failures(case, before, after)
    if case.json_stdout and run.returncode in (0, 1):
        failures += _result_failures(case, run)
    if case.reference is not None and not refused and not any(kind == INTERNAL for kind, _ in failures):
        failures += _reference_failures(case, run, folder / "reference")
    if run.seconds > case.limit:
        failures.append((OTHER, f"took {run.seconds:.1f} s, over its bound of {case.limit:g} s"))
    if run.left_behind:
        failures.append((OTHER, f"processes left behind: {run.left_behind}"))
    return Outcome(case, run, failures)


def execute(case: Case, sandbox: Sandbox, argv: tuple[str, ...], stdout: str | None = None) -> Run:
    argv = tuple(_placed(word, sandbox) for word in argv)
    env = sandbox.env({name: _placed(value, sandbox) if value is not None else None for name, value in case.env.items()})
    mode = stdout or case.stdout
    target = {PIPE: subprocess.PIPE, GONE: subprocess.PIPE, DEVNULL: subprocess.DEVNULL}.get(mode)
    full = open("/dev/full", "wb") if mode == FULL else None  # noqa: SIM115 - closed below
    # A signal the case sends must meet verify-perf as it meets it at a terminal: a sweep started
    # with `&` or nohup passes SIGINT or SIGHUP on ignored, and an ignored signal stays ignored.
    command = [*_DEFAULT_SIGNALS, *argv] if case.interrupt else [sys.executable, "-m", "verifier", *argv]
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=sandbox.path(case.cwd) if case.cwd else sandbox.project,
        env=env, stdin=subprocess.DEVNULL, stdout=full if full else target, stderr=subprocess.PIPE,
        start_new_session=True, preexec_fn=_before(mode, case.preexec),
    )
    if full:
        full.close()
    if mode == GONE:
        process.stdout.close()  # the reader has gone before the first line
    try:
        if case.interrupt:
            delay, number = case.interrupt
            try:
                process.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                process.send_signal(number)
        out, err = process.communicate(timeout=case.limit + GRACE)
    except subprocess.TimeoutExpired:
        _kill_session(process.pid)
        out, err = process.communicate()
    seconds = time.monotonic() - started
    left = _session_members(process.pid, wait=3.0)
    if left:
        _kill_session(process.pid)
    return Run(process.returncode, out or b"", (err or b"").decode("utf-8", "replace"), seconds, left)


_RESET_AND_RUN = (
    "import os, signal, sys\n"
    "for number in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):\n"
    "    signal.signal(number, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'verifier', *sys.argv[1:]])\n"
)
_DEFAULT_SIGNALS = (sys.executable, "-c", _RESET_AND_RUN)


def _placed(word: str, sandbox: Sandbox) -> str:
    return (word.replace("@HOME@", str(sandbox.home)).replace("@PROJECT@", str(sandbox.project))
            .replace("@ROOT@", str(sandbox.root)))


def _before(mode: str, preexec):
    if mode != CLOSED:
        return preexec

    def close_stdout() -> None:
        os.close(1)
        if preexec is not None:
            preexec()

    return close_stdout


def _session_members(session: int, wait: float) -> list[int]:
    """Processes still in the run's session (its workers), after up to `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        members = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            # fields: state, ppid, pgrp, session, ...; a zombie is gone already.
            if int(fields[3]) == session and fields[0] != b"Z":
                members.append(int(entry))
        if not members or time.monotonic() > deadline:
            return members
        time.sleep(0.1)


def _kill_session(session: int) -> None:
    try:
        os.killpg(session, signal.SIGKILL)
    except OSError:
        pass


def _crash_failures(run: Run) -> list[tuple[str, str]]:
    crash = next((text for text in CRASH_TEXTS if text in run.stderr), None)
    return [(INTERNAL, f"stderr holds {crash!r}")] if crash else []


def _exit_failures(case: Case, run: Run) -> list[tuple[str, str]]:
    failures = _crash_failures(run)
    code = run.returncode
    if case.exit_code is None:
        if code not in (0, 1):
            kind = INTERNAL if code is None or code < 0 or code > 2 else OTHER
            failures.append((kind, f"exit status {code} (documented: 0 or 1, as the reference run)"))
    elif code != case.exit_code:
        if code is None or code < 0 or code > 2:
            failures.append((INTERNAL, f"exit status {code} (documented: {case.exit_code})"))
        elif case.exit_code == 1 and code == 0:
            failures.append((FAIL_OPEN, "exit 0 where the code blocks (documented: 1)"))
        else:
            failures.append((OTHER, f"exit {code} (documented: {case.exit_code})"))
    injected = [text for text in case.stdout_lacks if text in run.stdout]
    if injected:
        failures.append((OTHER, f"stdout holds {injected}"))
    if case.stderr and case.stderr not in run.stderr:
        failures.append((OTHER, f"stderr lacks {case.stderr!r}"))
    return failures


def _content_failures(case: Case, sandbox: Sandbox) -> list[tuple[str, str]]:
    failures = []
    for name, text in case.written_lacks:
        path = sandbox.path(name)
        if path.is_file() and text in path.read_bytes():
            failures.append((OTHER, f"{name} holds {text!r}"))
    return failures


def _written_failures(case: Case, before, after) -> list[tuple[str, str]]:
    patterns = [_pattern(p) for p in case.outputs]
    protected = [_pattern(p) for p in case.protected]
    unexpected = [(path, what) for path, what in differences(before, after)
                  if not _allowed(path, patterns) or any(fnmatch.fnmatchcase(path, p) for p in protected)]
    if not unexpected:
        return []
    shown = ", ".join(f"{path} {what}" for path, what in unexpected[:5])
    more = f" (+{len(unexpected) - 5} more)" if len(unexpected) > 5 else ""
    return [(DATA_LOSS, shown + more)]


def _pattern(output: str) -> str:
    if output.startswith("~/"):
        return "home/" + output[2:]
    if output.startswith("/"):
        return output[1:]
    return "project/" + output


def _allowed(path: str, patterns: list[str]) -> bool:
    # A folder a permitted file goes into may be created (or removed) with it.
    return any(fnmatch.fnmatchcase(path, p) or p.startswith(path + "/") for p in patterns)


def result_of(run: Run) -> dict | None:
    try:
        return json.loads(run.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _result_failures(case: Case, run: Run) -> list[tuple[str, str]]:
    report = result_of(run)
    if not isinstance(report, dict):
        return [(OTHER, "stdout is not the JSON result")]
    failures = []
    findings = report.get("findings", [])
    vp900 = {f["path"] for f in findings if f["code"] == "VP900"}
    missing = [path for path in case.unanalysable if path not in vp900]
    if missing:
        failures.append((FAIL_OPEN, f"no VP900 for {missing}"))
    found = {(os.path.normpath(f["path"]), f["code"]) for f in findings}
    lost = [(path, code) for path, code in case.must_find if (os.path.normpath(path), code) not in found]
    if lost:
        failures.append((FAIL_OPEN, f"findings missing: {lost}"))
    if report.get("files_analysed") == 0 and (report.get("score") or {}).get("total") is not None:
        failures.append((FAIL_OPEN, "nothing analysed, yet scored"))
    return failures


def _reference_failures(case: Case, run: Run, folder: Path) -> list[tuple[str, str]]:
    sandbox = Sandbox(folder)
    case.reference(sandbox)
    reference = execute(case, sandbox, case.reference_argv or case.argv, stdout=PIPE)
    mine, theirs = _essence(run), _essence(reference)
    if mine == theirs:
        return []
    kind = FORGED if case.forged else FAIL_OPEN if theirs[0] == 1 and mine[0] == 0 else OTHER
    return [(kind, f"result differs from the reference run: {_first_difference(mine, theirs)}")]


def _essence(run: Run) -> tuple:
    """What a run decided: exit code, decision, score and findings (or raw stdout)."""
    report = result_of(run)
    if not isinstance(report, dict):
        return (run.returncode, run.stdout)
    findings = sorted((f["path"], f["line"], f["column"], f["code"], f["severity"]) for f in report.get("findings", []))
    return (run.returncode, report.get("decision", {}).get("status"), (report.get("score") or {}).get("total"),
            tuple(findings))


def _first_difference(mine: tuple, theirs: tuple) -> str:
    names = ("exit code", "decision", "score", "findings")
    for name, a, b in zip(names, mine, theirs):
        if a != b:
            if name == "findings":
                gone, extra = sorted(set(b) - set(a))[:3], sorted(set(a) - set(b))[:3]
                return f"findings lost {gone}, added {extra}"
            return f"{name} {a!r:.200} vs {b!r:.200}"
    return "?"
