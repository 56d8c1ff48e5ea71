"""Running the engine over many files: discovery, the results cache, processes, and the
project-wide heat pass that lets heat cross imports between the analysed files."""

from __future__ import annotations

import contextlib
import gc
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace

from verifier.config import Settings
from verifier.findings import Finding
from verifier.static.cache import ResultCache, run_key
from verifier.static.discovery import discover
from verifier.static.engine import FileResult, ModuleAnalysis
from verifier.static.heat import FunctionFacts, resolve_project
from verifier.static.parallel import analyse_many


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
    return analyze_files(list(discover(paths, settings.exclude)), settings, on_file, on_start)


def analyze_files(
    files: list[str],
    settings: Settings,
    on_file: Callable[[FileResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    reported: Collection[str] | None = None,
) -> AnalysisResult:
    """Analyse `files` together, so heat crosses imports between them.

    Files are analysed in `settings.jobs` processes and looked up in the results cache first
    when `settings.cache_dir` is set; results come back in the given order either way. With
    `reported` (a subset of `files`), the other files only lend their heat: their findings are
    not brought up to date by the project-wide pass.
    """
    with _rare_garbage_collection():
        return _analyze_files(files, settings, on_file, on_start, reported)


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
) -> AnalysisResult:
    rules = settings.selected_rules()
    codes = [rule.code for rule in rules]
    reported_set = None if reported is None else set(reported)
    wanted = None if reported_set is None else frozenset(i for i, path in enumerate(files) if path in reported_set)
    if on_start is not None:
        on_start(len(files))
    notify = on_file or (lambda _result: None)
    cache = ResultCache(settings.cache_dir, settings, codes) if settings.cache_dir else None
    keys = [cache.key_for(path) for path in files] if cache else [None] * len(files)
    whole_run = run_key([*keys, repr(None if wanted is None else sorted(wanted))]) if cache else None
    if whole_run is not None:
        finished = cache.load(f"run-{whole_run}")
        if isinstance(finished, AnalysisResult):
            for file_result in finished.files:
                notify(file_result)
            return finished

    results: list[FileResult | None] = [cache.load(key) if cache and key else None for key in keys]
    for result in results:
        if result is not None:
            notify(result)
    missing = [i for i, result in enumerate(results) if result is None]
    for index, result in zip(missing, analyse_many([files[i] for i in missing], codes, settings, settings.jobs)):
        results[index] = result
        notify(result)
        if cache and keys[index] and not result.internal_error:
            cache.store(keys[index], result)

    analysis = AnalysisResult(list(results))
    _apply_project_heat(analysis.files, keys, codes, settings, cache, wanted)
    if whole_run is not None and not analysis.internal_errors:
        cache.store(f"run-{whole_run}", AnalysisResult([replace(r, analysis=None) for r in analysis.files]))
    return analysis


def _apply_project_heat(
    files: list[FileResult],
    keys: list[str | None],
    codes: list[str],
    settings: Settings,
    cache: ResultCache | None,
    wanted: frozenset[int] | None,
) -> None:
    """Heat crosses modules: a helper imported by another file's batch loop is step code.

    Each file was analysed under its own heat; one fixed point over every file's summary
    (it updates the summaries in place) then says which files' heat changed, and only those
    with candidate findings (and, given `wanted`, only those reported) are analysed again.
    """
    analysed = [(i, f) for i, f in enumerate(files) if f.analysis is not None and f.analysis.heat is not None]
    if len(analysed) < 2:
        return
    project = resolve_project([f.analysis.heat for _, f in analysed])
    redo: list[tuple[int, str | None]] = []
    for index, file_result in analysed:
        if wanted is not None and index not in wanted:
            continue
        analysis = file_result.analysis
        if analysis.findings_may_change():
            key = keys[index]
            if key is not None:
                key = f"{key}-{_facts_digest(file_result.analysis, project)}"
                cached = cache.load(key) if cache else None
                if cached is not None:
                    file_result.findings = cached.findings
                    continue
            redo.append((index, key))
    again = analyse_many([files[i].path for i, _ in redo], codes, settings, settings.jobs, external=project)
    for (index, key), result in zip(redo, again):
        files[index].findings = result.findings
        files[index].internal_error = files[index].internal_error or result.internal_error
        if cache and key and not result.internal_error:
            cache.store(key, replace(result, analysis=None))


def _facts_digest(analysis: ModuleAnalysis, project: dict[str, FunctionFacts]) -> str:
    """What this file's re-analysis depends on: the project's facts about the functions it touches."""
    touched = set(analysis.local_facts) | {site.callee for site in analysis.heat.call_sites}
    relevant = sorted((key, project[key]) for key in touched if key in project)
    return hashlib.sha256(repr(relevant).encode()).hexdigest()[:16]
