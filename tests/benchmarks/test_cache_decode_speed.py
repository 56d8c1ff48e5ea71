"""How long reading the results cache's entries takes (`cache_format.loads`: the signature check,
the JSON parse and the checked decoding), on the entries a cached run of part of the installed
torch sources wrote (about 300 files: each file's result and heat summary, the whole run's, the
record of the last run). A cached run where one file's project facts changed reads every file's
summary; on the whole of torch's sources this decoding was about 60 % of such a run.

Slow (under a minute, most of it filling the cache): `pytest -m slow
tests/benchmarks/test_cache_decode_speed.py -s --benchmark-columns=median,min,max,rounds`. The
figures say where the project stands, they do not assert it. Collections run as often as in a
run (the runner's thresholds).
"""

from __future__ import annotations

import gc
import shutil
import statistics

import pytest

from tests.benchmarks.torch_sources import PART, torch_root
from verifier.config import Settings
from verifier.static import cache_format
from verifier.static.cache_key import signing_key
from verifier.static.cli_defaults import SourceDefaults
from verifier.static.constructor_switches import SwitchRecord
from verifier.static.engine import FileResult
from verifier.static.incremental import RunRecord
from verifier.static.runner import _ANALYSIS_GC_THRESHOLDS, AnalysisResult, analyze_paths

pytestmark = pytest.mark.slow

KINDS = (FileResult, AnalysisResult, RunRecord, SourceDefaults, SwitchRecord)


@pytest.fixture(scope="module")
def entries(tmp_path_factory) -> list[tuple[bytes, type, str]]:
    """Each entry a cached run over the part wrote: its bytes, the type it holds, its name."""
    source, root = torch_root().parent, tmp_path_factory.mktemp("decode")
    for folder in PART:
        shutil.copytree(source / folder, root / folder, ignore=shutil.ignore_patterns("*.so", "*.pyi", "__pycache__"))
    assert len(list(root.rglob("*.py"))) >= 280
    cache = root / ".cache"
    analyze_paths([str(root / "torch")], Settings(cache_dir=str(cache), jobs=2))
    key, found = signing_key(), []
    for path in sorted(cache.rglob("*.json")):
        data, name = path.read_bytes(), "/".join((path.parts[-4], path.parts[-3], path.stem))
        found.append((data, _kind_of(data, key, name), name))
    assert sum(kind is FileResult for _, kind, _ in found) >= 250
    return found


def _kind_of(data: bytes, key: bytes, name: str) -> type:
    for kind in KINDS:
        try:
            cache_format.loads(data, kind, key, name)
            return kind
        except cache_format.Invalid:
            continue
    raise AssertionError(f"{name} holds none of {KINDS}")


def test_decode_every_entry(benchmark, entries):
    key = signing_key()

    def decode_all() -> None:
        for data, kind, name in entries:
            cache_format.loads(data, kind, key, name)

    previous = gc.get_threshold()
    gc.set_threshold(*_ANALYSIS_GC_THRESHOLDS)
    try:
        benchmark.pedantic(decode_all, rounds=7, iterations=1, warmup_rounds=1)
    finally:
        gc.set_threshold(*previous)
    size = sum(len(data) for data, _, _ in entries)
    median = statistics.median(benchmark.stats.stats.data)
    benchmark.extra_info.update(entries=len(entries), megabytes=round(size / 1e6, 1))
    print(f"\n{len(entries)} entries, {size / 1e6:.1f} MB (format {cache_format.FORMAT}): "
          f"decoded in {median:.3f} s (median)")
