"""Analyzer speed on real code nobody here wrote: the installed torch package's own sources.

Slow (minutes): run with `pytest -m slow tests/benchmarks/test_analyzer_speed.py
--benchmark-columns=median,min,max,rounds`. Targets (issue 6): single process <= 1.3x the bare
`libcst.parse_module` floor, 2 processes >= 1.7x faster than 1, warm-cache re-run <= 1 s.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import libcst
import pytest

from verifier.config import Settings
from verifier.static.discovery import discover
from verifier.static.runner import analyze_paths

pytestmark = pytest.mark.slow


def _torch_sources() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    return str(Path(spec.origin).parent)


@pytest.fixture(scope="module")
def corpus() -> tuple[str, list[str]]:
    root = _torch_sources()
    return root, list(discover([root]))


def test_bare_parse_floor(benchmark, corpus):
    _, files = corpus

    def parse_all():
        for path in files:
            try:
                libcst.parse_module(Path(path).read_bytes())
            except Exception:
                pass

    benchmark.pedantic(parse_all, rounds=1, iterations=1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_verify_perf(benchmark, corpus, jobs):
    root, files = corpus
    result = benchmark.pedantic(lambda: analyze_paths([root], Settings(jobs=jobs)), rounds=1, iterations=1)
    assert len(result.files) == len(files)
    assert result.internal_errors == []
    benchmark.extra_info["files"] = len(files)
    benchmark.extra_info["parsed"] = sum(not f.skipped for f in result.files)
    benchmark.extra_info["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_warm_cache_rerun(benchmark, corpus, tmp_path_factory):
    root, _ = corpus
    settings = Settings(jobs=os.cpu_count() or 1, cache_dir=str(tmp_path_factory.mktemp("cache")))
    cold = analyze_paths([root], settings)
    warm = benchmark.pedantic(lambda: analyze_paths([root], settings), rounds=3, iterations=1)
    assert [f.to_dict() for f in warm.findings] == [f.to_dict() for f in cold.findings]
