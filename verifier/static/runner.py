"""Running the engine over many files: discovery, the results cache, processes, and the
project-wide heat pass that lets heat cross imports between the analysed files."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from verifier.config import Settings
from verifier.findings import Finding
from verifier.static.cache import ResultCache, open_cache, run_key
from verifier.static.cli_defaults import (
    SourceDefaults, agreed_defaults, defaults_defined_in, may_define_defaults, with_switches,
)
from verifier.static.constructor_switches import SwitchRecord, project_switches
from verifier.static.source import UnreadableSource, read_source
from verifier.static.discovery import discover
from verifier.static.engine import (
    FileResult, ModuleAnalysis, number_lines_again, run_limit_message, timeout_message, unanalysable_result,
)
from verifier.static.bindings import bind_project
from verifier.static.heat import FunctionFacts, project_facts, resolve_key, resolve_project
from verifier.static.incremental import Reuse, RunRecord, facts_digest, record_key, reuse_last_run
from verifier.static.parallel import AnalysisPool, shared_pool


@dataclass
class AnalysisResult:
    files: list[FileResult] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return sorted(f for result in self.files for f in result.findings)

    @property
    def internal_errors(self) -> list[FileResult]:
        return [r for r in self.files if r.internal_error]


def analyze_paths(
    paths: Iterable[str],
    settings: Settings,
    on_file: Callable[[FileResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> AnalysisResult:
    """Analyse every Python file under `paths`. Raises UsageError for bad paths."""
    unreadable: list[tuple[str, str]] = []
    files = list(discover(paths, settings.exclude, unreadable=unreadable, respect_ignore_files=settings.respect_gitignore))
    return analyze_files(files, settings, on_file, on_start, unreadable=unreadable)


def analyze_files(
    files: list[str],
    settings: Settings,
    on_file: Callable[[FileResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    reported: Collection[str] | None = None,
    unreadable: Sequence[tuple[str, str]] = (),
) -> AnalysisResult:
    """Analyse `files` together, so heat crosses imports between them.

    Files are analysed in `settings.jobs` processes and looked up in the results cache first
    when `settings.cache_dir` is set; results come back in the given order either way. With
    `reported` (a subset of `files`), the other files only lend their heat: their findings are
    not brought up to date by the project-wide pass. Each of the `unreadable` folders (path,
    reason) found while listing them is reported as a VP900 of its own. Files not analysed
    within `settings.run_timeout` of the start are VP900s too (`run_limit_message`).
    """
    deadline = time.monotonic() + settings.run_timeout if settings.run_timeout else None
    with _rare_garbage_collection():
        return _analyze_files(files, settings, on_file, on_start, reported, unreadable, deadline=deadline)


# Parsing allocates millions of objects that die by reference counting; with the default
# thresholds the cycle collector keeps walking every result kept so far (about a tenth of a run).
_ANALYSIS_GC_THRESHOLDS = (100_000, 50, 50)


@contextlib.contextmanager
def _rare_garbage_collection() -> Iterator[None]:
    previous = gc.get_threshold()
    gc.set_threshold(*_ANALYSIS_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _analyze_files(
    files: list[str],
    settings: Settings,
    on_file: Callable[[FileResult], None] | None,
    on_start: Callable[[int], None] | None,
    reported: Collection[str] | None,
    unreadable: Sequence[tuple[str, str]],
    reuse: bool = True,
    deadline: float | None = None,
) -> AnalysisResult:
    """With `reuse` False the cache is written but never read (every stored result is replaced)."""
    rules = settings.selected_rules()
    codes = [rule.code for rule in rules]
    reported_set = None if reported is None else set(reported)
    wanted = None if reported_set is None else frozenset(i for i, path in enumerate(files) if path in reported_set)
    folders = [unanalysable_result(folder, reason, rules, settings) for folder, reason in unreadable]
    if on_start is not None:
        on_start(len(files))
    notify = on_file or (lambda _result: None)
    cache = open_cache(settings.cache_dir, settings, codes) if settings.cache_dir else None
    with contextlib.ExitStack() as cleanup:
        if cache is not None:
            cleanup.callback(cache.close)
        if not settings.config_defaults:
            settings = replace(settings, config_defaults=_project_defaults(files, settings, cache if reuse else None))
            if cache is not None:
                cache.use_settings(settings, codes)
        pool = shared_pool()
        keys = [cache.key_for(path) for path in files] if cache else [None] * len(files)
        whole_run = run_key([*keys, repr(None if wanted is None else sorted(wanted))]) if cache else None
        if whole_run is not None and reuse:
            finished = cache.load(whole_run, AnalysisResult)
            if finished is not None and len(finished.files) == len(files) and all(
                map(_belongs_to, finished.files, files)
            ):
                for file_result in finished.files:
                    notify(file_result)
                return AnalysisResult(folders + finished.files)

        def first_pass(indices: list[int]) -> list[FileResult]:
            """Each file's result under its own heat: stored, else analysed (and stored)."""
            found: dict[int, FileResult] = {}
            for index in indices:
                result = cache.load(keys[index], FileResult) if cache and keys[index] and reuse else None
                if result is not None and _belongs_to(result, files[index]):
                    found[index] = result
                    from_cache.add(index)
            missing = [i for i in indices if i not in found]
            for index, result in zip(missing, pool.analyse([files[i] for i in missing], codes, settings, deadline=deadline)):
                found[index] = result
                if cache and keys[index] and _cacheable(result, settings):
                    cache.store(keys[index], result)
            for index in indices:
                if index not in notified:
                    notified.add(index)
                    notify(found[index])
            return [found[i] for i in indices]

        from_cache: set[int] = set()
        notified: set[int] = set()
        last_run = record_key(files, wanted) if whole_run is not None else None
        record = cache.load(last_run, RunRecord) if last_run is not None and reuse else None
        if record is not None:
            try:
                reused = reuse_last_run(record, files, keys, Reuse(
                    load=lambda key: cache.load(key, FileResult),
                    first_pass=first_pass,
                    judge=lambda index, read: _judge_with(files[index], keys[index], read, codes, settings, cache, pool, deadline),
                ))
            except Exception:
                reused = None  # a stored record or summary that does not work as one: the whole pass runs
            if reused is not None:
                reused, next_record = reused
                for index, result in enumerate(reused):
                    if index not in notified:
                        notify(result)
                if all(_cacheable(r, settings) for r in reused):
                    final = [replace(r, analysis=None) for r in reused]
                    cache.store(whole_run, AnalysisResult(final))
                    cache.store(last_run, replace(next_record, files=final))
                return AnalysisResult(folders + reused)

        from_cache.clear()
        results = first_pass(list(range(len(files))))
        stored = bool(from_cache)
        analysis = AnalysisResult(list(results))
        try:
            judged_with, lined = _apply_project_heat(analysis.files, keys, codes, settings, cache, pool, wanted, reuse, deadline)
        except Exception:
            if not stored:
                raise
            # A stored heat summary that passed the format checks but does not work as one (an
            # entry crafted and re-signed): every file is analysed again and its entry replaced.
            cleanup.close()
            return _analyze_files(files, settings, None, None, reported, unreadable, reuse=False, deadline=deadline)
        if whole_run is not None and all(_cacheable(r, settings) for r in analysis.files):
            final = [replace(r, analysis=None) for r in analysis.files]
            cache.store(whole_run, AnalysisResult(final))
            cache.store(last_run, RunRecord(list(keys), final, judged_with, sorted(lined)))
    analysis.files[:0] = folders
    return analysis


def _project_defaults(files: list[str], settings: Settings, cache: ResultCache | None) -> tuple[tuple[str, object], ...]:
    """`project_defaults` of the run's files; with a cache, each file's part is parsed once per
    content (a run over an unchanged tree parses nothing before its cache lookups), and the
    constructor switches are read again only in the files changed since the last run."""
    texts = list(_python_texts(files, settings))

    def definitions() -> Iterator[tuple[tuple[str, object], ...]]:
        for text in texts:
            if not may_define_defaults(text):
                continue
            if cache is None:
                yield defaults_defined_in(text)
                continue
            key = "defaults-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            stored = cache.load(key, SourceDefaults)
            if stored is None:
                stored = SourceDefaults(defaults_defined_in(text))
                cache.store(key, stored)
            yield stored.definitions

    if cache is None:
        return with_switches(agreed_defaults(definitions()), project_switches(texts).kept)
    # One record per list of files (like the last run's), named like a file's defaults.
    key = "defaults-" + hashlib.sha256("\0".join(["switches", *files]).encode("utf-8", "surrogatepass")).hexdigest()
    previous = cache.load(key, SwitchRecord)
    record = project_switches(texts, previous)
    if record is not previous:
        cache.store(key, record)
    return with_switches(agreed_defaults(definitions()), record.kept)


def _python_texts(files: Iterable[str], settings: Settings) -> Iterator[str]:
    """The text of each Python file of the run that can be read within the size limit (what
    cannot be read defines no configuration; its own analysis says why)."""
    for path in files:
        if not path.endswith(".py"):
            continue
        try:
            # The analysis's own reader: never blocks on a FIFO or a device, honours the size limit.
            yield read_source(path, settings.max_file_size).text
        except UnreadableSource:
            continue


def _belongs_to(result: FileResult, path: str) -> bool:
    """A stored result is this file's, and speaks of no other file."""
    return result.path == path and all(finding.path == path for finding in [*result.findings, *result.suppressed])


def _cacheable(result: FileResult, settings: Settings) -> bool:
    """A bug in verify-perf is tried again next run, and so is a time-out (the file's or the run's):
    it depends on how busy the machine was, not only on what the key covers. A file over the
    size limit stays over it for the same content and settings (the limits are part of the key)."""
    if result.internal_error:
        return False
    timed_out = {
        message(limit) for message, limit in ((timeout_message, settings.file_timeout),
                                              (run_limit_message, settings.run_timeout)) if limit
    }
    return not any(f.code == "VP900" and f.message in timed_out for f in result.findings)


def _apply_project_heat(
    files: list[FileResult],
    keys: list[str | None],
    codes: list[str],
    settings: Settings,
    cache: ResultCache | None,
    pool: AnalysisPool,
    wanted: frozenset[int] | None,
    reuse: bool = True,
    deadline: float | None = None,
) -> None:
    """Heat crosses modules: a helper imported by another file's batch loop is step code.

    Each file was analysed under its own heat; one fixed point over every file's summary
    (it updates the summaries in place) then says which files' heat changed, and only those
    with candidate findings (and, given `wanted`, only those reported) are analysed again.
    Returns, for the next run's record, the project facts each of those was judged with, and
    the files given lines only for other files' traces.
    """
    judged_with: dict[str, dict[str, FunctionFacts]] = {}
    analysed = [(i, f) for i, f in enumerate(files) if f.analysis is not None and f.analysis.heat is not None]
    if not analysed:
        return judged_with, set()
    models = [f.analysis.heat for _, f in analysed]
    # Call sites bind parameters and receivers first (`bindings.py`); heat then follows the calls.
    bind_project(models)
    project = resolve_project(models)
    lined = _number_traced_files(analysed, wanted, project, settings)
    if lined:
        project = project_facts(models)
    redo: list[tuple[int, str | None]] = []
    for index, file_result in analysed:
        if wanted is not None and index not in wanted:
            continue
        analysis = file_result.analysis
        if analysis.findings_may_change():
            read = judged_with[file_result.path] = _facts_read(analysis, project)
            key = keys[index]
            if key is not None:
                key = f"{key}-{facts_digest(read)}"
                cached = cache.load(key, FileResult) if cache and reuse else None
                if cached is not None and _belongs_to(cached, file_result.path):
                    file_result.findings, file_result.suppressed = cached.findings, cached.suppressed
                    continue
            redo.append((index, key))
    again = pool.analyse([files[i].path for i, _ in redo], codes, settings, external=project, deadline=deadline)
    for (index, key), result in zip(redo, again):
        files[index].findings, files[index].suppressed = result.findings, result.suppressed
        files[index].internal_error = files[index].internal_error or result.internal_error
        if cache and key and _cacheable(result, settings):
            cache.store(key, replace(result, analysis=None))
    return judged_with, lined


def _judge_with(
    path: str,
    key: str | None,
    read: dict[str, FunctionFacts],
    codes: list[str],
    settings: Settings,
    cache: ResultCache | None,
    pool: AnalysisPool,
    deadline: float | None,
) -> FileResult:
    """One file judged with the project facts it reads, as the project pass judges it (and
    stored under the same key)."""
    if key is not None:
        key = f"{key}-{facts_digest(read)}"
        cached = cache.load(key, FileResult) if cache else None
        if cached is not None and _belongs_to(cached, path):
            return cached
    [result] = pool.analyse([path], codes, settings, external=read, deadline=deadline)
    if cache and key and _cacheable(result, settings):
        cache.store(key, replace(result, analysis=None))
    return result


def _number_traced_files(
    analysed: list[tuple[int, FileResult]],
    wanted: frozenset[int] | None,
    project: dict[str, FunctionFacts],
    settings: Settings,
) -> bool:
    """Lines for the files that the heat traces of the files about to be analysed again pass
    through, where their own analysis did not compute them (no hot loop of their own): each
    such file is parsed once more. A finding's trace is its function's, so only the functions
    holding candidate findings count, and those a call site binds a fact to (a finding may appear
    there only now). Returns the files that got their lines."""
    unnumbered: set[str] = set()
    for index, file_result in analysed:
        analysis = file_result.analysis
        if (wanted is not None and index not in wanted) or not analysis.findings_may_change():
            continue
        keys = {c.where.function.key for c in analysis.candidates if c.where.function is not None}
        keys.update(function.key for function in analysis.heat.functions if function.bound)
        for key in keys:
            known = project.get(key)
            if known is not None:
                unnumbered.update(step.path for step in (*known.trace, *known.opt_in) if not step.line)
    numbered: set[str] = set()
    for _, file_result in analysed:
        heat = file_result.analysis.heat
        if file_result.path in unnumbered and not heat.numbered and number_lines_again(file_result.path, heat, settings):
            numbered.add(file_result.path)
    return numbered


def _facts_read(analysis: ModuleAnalysis, project: dict[str, FunctionFacts]) -> dict[str, FunctionFacts]:
    """What this file's re-analysis depends on: the project's facts about the functions it touches."""
    touched = set(analysis.local_facts) | {resolve_key(site.callee, project) for site in analysis.heat.call_sites}
    return dict(sorted((key, project[key]) for key in touched if key in project))
