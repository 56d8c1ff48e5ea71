"""Per-file analysis in worker processes that no single file can take down.

libcst's native parser can crash (1,500 unclosed brackets), recurse or allocate without bound,
and a signal cannot interrupt it while it runs. So files are analysed in long-lived worker
processes, each with a memory limit, while this process keeps a hard deadline per file. A
worker that crashes, runs out of memory or passes the deadline is replaced, and only the file
it was working on becomes a VP900 saying why; every other file's findings are kept. The whole
run has a deadline too (`--run-timeout`): many files each just under the per-file limit would
otherwise take as long as they like, so the files not done by then become VP900s as well. Workers
die with this process (Linux: a parent-death signal; elsewhere when they next read their pipe).

Workers receive paths and rule codes, never trees; each result carries only findings and the
file's small heat summary, so memory stays flat however many files there are.
"""

from __future__ import annotations

import atexit
import collections
import faulthandler
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from verifier.config import Settings
from verifier.static.source import install_stand_ins, stand_ins

MAX_JOBS = 256
# Below this many files per worker, starting another process costs more than it saves.
_MIN_FILES_PER_WORKER = 8
# Files sent ahead to a worker, so that it never waits for this process between two files.
_DEPTH = 2
# How much address space a worker may add to what it had when it started.
WORKER_MEMORY = 2 << 30
# Past the per-file limit (which the worker enforces itself where Python code runs), the
# time left for native code to return before the worker is killed.
_GRACE_SECONDS = 1.0
# Deep but valid code (a 500-branch `elif`) needs more than Python's default 1,000 frames; a
# worker that overflows its C stack instead only loses the file it was analysing.
_WORKER_RECURSION_LIMIT = 20_000


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    connection: Connection
    configured: int = -1
    in_flight: collections.deque = field(default_factory=collections.deque)
    # When the worker began its current file (the head of `in_flight`).
    started: float = 0.0


class AnalysisPool:
    """Up to `jobs` workers per call, started when first needed and kept for later calls."""

    def __init__(self) -> None:
        self._workers: list[_Worker] = []
        self._generation = 0
        self._configuration: tuple = ()
        methods = multiprocessing.get_all_start_methods()
        self._context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")

    def analyse(
        self, paths: Sequence[str], rule_codes: Sequence[str], settings: Settings, external: dict | None = None,
        deadline: float | None = None,
    ) -> Iterator:
        """Yield a FileResult for each path, in order, using up to `settings.jobs` workers; a
        file not done by `deadline` (time.monotonic()) is a VP900 saying so."""
        if not paths:
            return
        self._configure(tuple(rule_codes), settings, external)
        wanted = min(max(1, settings.jobs), max(1, len(paths) // _MIN_FILES_PER_WORKER))
        pending = collections.deque(enumerate(paths))
        done: dict[int, object] = {}
        next_index = 0
        try:
            while next_index < len(paths):
                if deadline is not None and time.monotonic() >= deadline:
                    self._give_up(done, pending)
                else:
                    self._dispatch(pending, wanted)
                    self._collect(done, pending, deadline)
                while next_index in done:
                    yield done.pop(next_index)
                    next_index += 1
        finally:
            # Abandoned midway (an interrupt, an error downstream): results still on their way
            # belong to no one, so the workers computing them go.
            for worker in [w for w in self._workers if w.in_flight]:
                self._stop(worker)
                self._workers.remove(worker)

    def close(self) -> None:
        """Stop every worker: politely when idle, at once when busy."""
        for worker in self._workers:
            if not worker.in_flight:
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + 1.0
        for worker in self._workers:
            if not worker.in_flight:
                worker.process.join(max(0.0, deadline - time.monotonic()))
            self._stop(worker)
        self._workers = []

    def _configure(self, rule_codes: tuple[str, ...], settings: Settings, external: dict | None) -> None:
        from verifier.static.engine import unanalysable_result

        # Paths are relative to this process's folder, which a library caller may have changed.
        folder = os.getcwd()
        # Source read from standard input stands in for its file in the workers too.
        standing = stand_ins()
        current = self._configuration
        if (
            not current or current[:2] != (rule_codes, settings) or current[2] is not external
            or current[3] != folder or current[4] != standing
        ):
            from verifier.rules import all_rules

            by_code = {rule.code: rule for rule in all_rules()}
            self._generation += 1
            self._configuration = (rule_codes, settings, external, folder, standing)
            self._rules = [by_code[code] for code in rule_codes]
            self._settings = settings
            self._unanalysable = unanalysable_result

    def _dispatch(self, pending: collections.deque, wanted: int) -> None:
        while pending:
            worker = self._available(wanted)
            if worker is None:
                return
            if worker.configured != self._generation:
                worker.connection.send(("configure", self._configuration))
                worker.configured = self._generation
            index, path = pending.popleft()
            if not worker.in_flight:
                worker.started = time.monotonic()
            worker.in_flight.append((index, path))
            worker.connection.send(("file", path))

    def _available(self, wanted: int) -> _Worker | None:
        # A worker is reconfigured only while idle: a large message to a busy worker could fill
        # the pipe while it is itself blocked sending a result.
        candidates = [
            w for w in self._workers[:wanted]
            if len(w.in_flight) < _DEPTH and (w.configured == self._generation or not w.in_flight)
        ]
        if candidates:
            return min(candidates, key=lambda w: len(w.in_flight))
        if len(self._workers) < wanted:
            worker = self._start()
            self._workers.append(worker)
            return worker
        return None

    def _start(self) -> _Worker:
        parent_end, child_end = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_serve, args=(child_end, os.getpid(), WORKER_MEMORY), name="verify-perf-worker", daemon=True
        )
        # The collector in a forked worker would otherwise write to every inherited object
        # (copying its memory page by page) before the first file is done.
        gc.freeze()
        try:
            process.start()
        finally:
            gc.unfreeze()
        child_end.close()  # so that the worker's death reads as end-of-file here
        return _Worker(process, parent_end)

    def _collect(self, done: dict, pending: collections.deque, run_deadline: float | None = None) -> None:
        busy = {w.connection: w for w in self._workers if w.in_flight}
        limit = self._settings.file_timeout
        now = time.monotonic()
        deadlines = [w.started + limit + _GRACE_SECONDS for w in busy.values()] if limit else []
        if run_deadline is not None:
            deadlines.append(run_deadline)
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        for connection in wait(list(busy), timeout):
            worker = busy[connection]
            try:
                result = connection.recv()
            except Exception:  # end of file or a torn message: the worker died mid-file
                self._lose(worker, done, pending, _death_reason(self._stop(worker)))
                continue
            index, _ = worker.in_flight.popleft()
            done[index] = result
            worker.started = time.monotonic()
        if limit:
            now = time.monotonic()
            from verifier.static.engine import timeout_message

            for worker in [w for w in self._workers if w.in_flight and now > w.started + limit + _GRACE_SECONDS]:
                self._stop(worker)
                self._lose(worker, done, pending, timeout_message(limit))

    def _give_up(self, done: dict, pending: collections.deque) -> None:
        """The run's deadline passed: the busy workers stop, and every file not done is a VP900."""
        from verifier.static.engine import run_limit_message

        reason = run_limit_message(self._settings.run_timeout)
        for worker in [w for w in self._workers if w.in_flight]:
            self._stop(worker)
            self._workers.remove(worker)
            pending.extendleft(reversed(worker.in_flight))
            worker.in_flight.clear()
        while pending:
            index, path = pending.popleft()
            done[index] = self._unanalysable(path, reason, self._rules, self._settings)

    def _lose(self, worker: _Worker, done: dict, pending: collections.deque, reason: str) -> None:
        """The worker is gone: its current file gets the VP900, files queued behind it go back."""
        index, path = worker.in_flight.popleft()
        done[index] = self._unanalysable(path, reason, self._rules, self._settings)
        pending.extendleft(reversed(worker.in_flight))
        worker.in_flight.clear()
        self._workers.remove(worker)

    @staticmethod
    def _stop(worker: _Worker) -> int | None:
        """Kill the worker if it still runs and return its exit code (negative: the signal)."""
        process = worker.process
        if process.exitcode is None:
            process.join(0.05)
        if process.exitcode is None:
            process.kill()
            process.join()
        worker.connection.close()
        return process.exitcode


def _death_reason(exit_code: int | None) -> str:
    if exit_code is not None and exit_code < 0:
        number = -exit_code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number in (signal.SIGSEGV, getattr(signal, "SIGBUS", -1)):
            return f"the parser crashed ({name}): the code is nested too deeply or too complex for it"
        if number == signal.SIGABRT:
            return f"the analysis aborted ({name}), usually for running out of memory (a worker may use {_gib(WORKER_MEMORY)})"
        if number == signal.SIGKILL:
            return f"the analysis process was killed ({name}), e.g. by the system for using too much memory"
        return f"the analysis process died ({name})"
    return f"the analysis process exited unexpectedly (exit code {exit_code})"


def _gib(size: int) -> str:
    return f"{size / (1 << 30):g} GiB"


def _serve(connection: Connection, parent: int, memory: int) -> None:
    """A worker's loop: configure, then analyse one path per message until told to stop."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _silence_native_messages()
    _limit_memory(memory)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _WORKER_RECURSION_LIMIT))
    from verifier.rules import all_rules

    by_code = {rule.code: rule for rule in all_rules()}
    rules: list = []
    settings = Settings()
    external = None
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        kind, payload = message
        if kind == "configure":
            codes, settings, external, folder, standing = payload
            rules = [by_code[code] for code in codes]
            os.chdir(folder)
            install_stand_ins(standing)
        else:
            connection.send(analyse_without_cycle_collection(payload, rules, settings, external))


def analyse_without_cycle_collection(path: str, rules: list, settings: Settings, external: dict | None):
    """`analyze_file` with the cycle collector paused. A parsed tree holds no reference cycles
    and is freed by reference counting when its file is done; a collection while it is alive
    only walks its millions of nodes (about 1 % of a run). The few cycles a file's analysis
    leaves behind are collected between files, as before."""
    from verifier.static.engine import analyze_file

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return analyze_file(path, rules, settings, external=external)
    finally:
        if was_enabled:
            gc.enable()


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the worker stops when its pipe closes
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(0)


def _silence_native_messages() -> None:
    """A native crash prints its own messages (Rust's allocation failure, a backtrace); the run
    reports the file as VP900 instead, so they would only clutter the user's terminal."""
    faulthandler.disable()  # a host that enabled it (pytest) would print each crash's traceback
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass


def _limit_memory(budget: int) -> None:
    try:
        import resource

        with open("/proc/self/statm") as statm:
            current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        return  # no /proc: the limit is left to the system
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + budget
    for existing in (soft, hard):
        if existing != resource.RLIM_INFINITY:
            limit = min(limit, existing)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        pass


_shared: tuple[int, AnalysisPool] | None = None


def shared_pool() -> AnalysisPool:
    """This process's pool: a library or test suite that analyses many times starts workers once."""
    global _shared
    if _shared is None or _shared[0] != os.getpid():
        pool = AnalysisPool()
        atexit.register(pool.close)
        _shared = (os.getpid(), pool)
    return _shared[1]
