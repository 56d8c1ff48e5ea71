"""The results cache reads back data only: crafted or corrupt entries are misses (never code,
never a crash), entries not signed with this user's key are misses (a forged or committed cache
never decides a result), a root that is a link, a file or tracked by git is not used, a folder of
someone else's files is refused, nothing is written outside the root, and the key covers what a
result depends on (package structure, the time limit)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import pickle
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from verifier.config import Settings
from verifier.errors import UsageError
from verifier.static import cache_format
from verifier.static.cache_key import signing_key
from verifier.static.constructor_switches import SwitchRecord
from verifier.static.engine import FileResult
from verifier.static.incremental import RunRecord
from verifier.static.runner import AnalysisResult, analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def rows(result):
    return [(f.path, f.line, f.column, f.code, f.severity.name, f.message) for f in result.findings]


def project(root: Path) -> Path:
    folder = root / "project"
    folder.mkdir()
    shutil.copy(EXAMPLES / "bad_train.py", folder / "bad_train.py")
    shutil.copy(EXAMPLES / "good_train.py", folder / "good_train.py")
    return folder


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.json") if p.is_file())


def analysed_paths(monkeypatch) -> list[str]:
    """The paths the analysis pool is asked to analyse from now on (cache misses), in order."""
    from verifier.static.parallel import AnalysisPool

    analysed: list[str] = []
    original = AnalysisPool.analyse

    def spy(pool, paths, *args, **kwargs):
        analysed.extend(paths)
        return original(pool, paths, *args, **kwargs)

    monkeypatch.setattr(AnalysisPool, "analyse", spy)
    return analysed


class Exploit:
    """Unpickling this runs a shell command: what a committed pickle cache entry could do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_pickle_or_random_bytes_in_every_entry_is_a_miss(tmp_path):
    folder, cache = project(tmp_path), tmp_path / "cache"
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    stored = entries(cache)
    assert len(stored) >= 5  # two files, the whole run, the record of the last run and the switches'
    marker = tmp_path / "PWNED"
    payloads = [pickle.dumps(Exploit(marker)), os.urandom(4096), b"", b"0" * 64 + b"\n{}", b"\xff" * 10]
    for payload in payloads:
        for entry in stored:
            entry.write_bytes(payload)
            entry.with_suffix(".pickle").write_bytes(pickle.dumps(Exploit(marker)))
        warm = analyze_paths([str(folder)], settings)
        assert rows(warm) == rows(cold)
        assert warm.internal_errors == []
        assert not marker.exists()
    # Every bad entry was rewritten with a valid one.
    for entry in stored:
        kind = AnalysisResult if "run-" in entry.name else RunRecord if "last-" in entry.name else FileResult
        load(entry, SwitchRecord if "defaults-" in entry.name else kind)


def entry_name(entry: Path) -> str:
    """What an entry's signature covers besides its body: fingerprint/settings/key."""
    return "/".join((entry.parts[-4], entry.parts[-3], entry.stem))


def load(entry: Path, kind: type):
    return cache_format.loads(entry.read_bytes(), kind, signing_key(), entry_name(entry))


def signed(document, name: str = "entry") -> bytes:
    """Signed with this user's key: what only a bug in verify-perf could have written."""
    body = json.dumps(document).encode()
    return cache_format.signature(signing_key(), name, body) + b"\n" + body


FORMAT = cache_format.FORMAT


@pytest.mark.parametrize(
    "document",
    [
        {"format": FORMAT, "objects": [["os:system", {}]], "root": {"ref": 0}},
        {"format": FORMAT, "objects": [["verifier.static.cache:ResultCache", {"root": "/"}]], "root": {"ref": 0}},
        {"format": FORMAT, "objects": [["verifier.static.engine:FileResult", [1, [], 0.0, None, None, False, []]]],
         "root": {"ref": 0}},
        {"format": FORMAT, "objects": [], "root": {"ref": 7}},
        {"format": FORMAT, "objects": [], "root": {"enum": "verifier.findings:Severity", "name": "mro"}},
        {"format": FORMAT, "objects": [], "root": {"tuple": [{"dict": [[1]]}]}},
        # An entry of the format before: a dataclass's fields by name.
        {"format": FORMAT - 1, "objects": [["verifier.static.engine:FileResult", {"path": "a.py"}]], "root": {"ref": 0}},
        {"format": FORMAT, "objects": [["verifier.static.engine:FileResult", {"path": "a.py"}]], "root": {"ref": 0}},
        [1, 2, 3],
    ],
)
def test_well_formed_but_unexpected_entries_are_refused(document):
    with pytest.raises(cache_format.Invalid):
        cache_format.loads(signed(document), FileResult, signing_key(), "entry")


def set_field(record: list, name: str, value) -> bool:
    """Set a stored object's field (a dataclass's by its place in the declared order, another
    class's attribute by name); False when its class has no such field."""
    kind, fields = record
    module, _, qualname = kind.partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
        if name not in names:
            return False
        fields[names.index(name)] = value
    elif name in fields:
        fields[name] = value
    else:
        return False
    return True


def test_type_confusion_in_a_finding_is_refused(tmp_path):
    result = analyze_paths([str(EXAMPLES / "bad_train.py")], Settings()).files[0]
    document = json.loads(cache_format.dumps(result, signing_key(), "entry").partition(b"\n")[2])
    for record in document["objects"]:
        if record[0] == "verifier.findings:Finding":
            assert set_field(record, "line", "71")
            break
    with pytest.raises(cache_format.Invalid):
        cache_format.loads(signed(document), FileResult, signing_key(), "entry")


def test_a_result_and_its_heat_summary_survive_the_round_trip(tmp_path):
    result = analyze_paths([str(EXAMPLES / "bad_train.py")], Settings()).files[0]
    key = signing_key()
    again = cache_format.loads(cache_format.dumps(result, key, "entry"), FileResult, key, "entry")
    assert again.findings == result.findings
    assert again.analysis.local_facts == result.analysis.local_facts
    assert [c.heat for c in again.analysis.candidates] == [c.heat for c in result.analysis.candidates]
    assert len(again.analysis.heat.functions) == len(result.analysis.heat.functions)


def test_a_symlinked_or_non_directory_root_is_not_used(tmp_path, capsys):
    folder = project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("keep me\n")
    cold = analyze_paths([str(folder)], Settings())
    for root in (str(link), f"{link}/", str(not_a_folder)):  # `link/` would resolve the link
        result = analyze_paths([str(folder)], Settings(cache_dir=root))
        assert rows(result) == rows(cold)
        assert "warning: not using the cache" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []
    assert not_a_folder.read_text() == "keep me\n"


@pytest.mark.parametrize("contents", [
    {"notes.txt": "mine\n"},
    {".gitignore": "*.pyc\n"},  # a name the cache uses, with someone else's text
    {"CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# made by another tool\n"},
], ids=["a-file", "a-foreign-gitignore", "another-tools-tag"])
def test_a_folder_of_someone_elses_files_is_refused_untouched(tmp_path, contents):
    folder, root = project(tmp_path), tmp_path / "root"
    root.mkdir()
    for name, text in contents.items():
        (root / name).write_text(text)
    with pytest.raises(UsageError) as refused:
        analyze_paths([str(folder)], Settings(cache_dir=str(root)))
    assert str(refused.value).startswith(f"refusing to use {root} as the results cache: it holds files")
    assert {p.name: p.read_text() for p in root.iterdir()} == contents


def test_an_empty_folder_is_claimed_as_the_cache(tmp_path):
    folder, root = project(tmp_path), tmp_path / "root"
    root.mkdir()
    settings = Settings(cache_dir=str(root))
    cold = analyze_paths([str(folder)], settings)
    assert (root / "CACHEDIR.TAG").is_file() and entries(root)
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)


def test_links_inside_the_root_are_never_followed(tmp_path):
    folder, cache = project(tmp_path), tmp_path / "cache"
    settings = Settings(cache_dir=str(cache))
    analyze_paths([str(folder)], settings)
    outside = tmp_path / "outside"
    outside.mkdir()
    (fingerprint,) = [p for p in cache.iterdir() if p.is_dir()]
    shutil.rmtree(fingerprint)
    fingerprint.symlink_to(outside)
    (cache / ".gitignore").unlink()
    (cache / ".gitignore").symlink_to(tmp_path / "victim")
    result = analyze_paths([str(folder)], settings)
    assert rows(result) == rows(analyze_paths([str(folder)], Settings()))
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "victim").exists()


def test_the_root_is_ignored_by_git_and_tagged(tmp_path):
    folder, cache = project(tmp_path), tmp_path / "cache"
    analyze_paths([str(folder)], Settings(cache_dir=str(cache)))
    assert (cache / ".gitignore").read_text().endswith("\n*\n")
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_adding_an_init_file_changes_the_key(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "helpers.py").write_text(
        "def train_step(model, x, device):\n    loss = model(x.to(device)).sum()\n"
        "    loss.backward()\n    return loss.item()\n"
    )
    (pkg / "train.py").write_text(
        "from pkg.helpers import train_step\n"
        "for x in loader:\n    print(train_step(model, x, \"cuda\"))\n"
    )
    settings = Settings(cache_dir=str(tmp_path / "cache"), select=("VP201",))
    analyze_paths([str(pkg)], settings)
    (pkg / "__init__.py").write_text("")
    warm = analyze_paths([str(pkg)], settings)
    cold = analyze_paths([str(pkg)], Settings(select=("VP201",)))
    assert rows(warm) == rows(cold)
    assert [(Path(f.path).name, f.line, f.code) for f in cold.findings] == [("helpers.py", 4, "VP201")]


def test_a_result_under_one_time_limit_is_not_reused_under_another(tmp_path):
    body = "import torch\n" + "".join(f"def f{i}(x):\n    return x.item() + {i}\n" for i in range(3000))
    (tmp_path / "huge.py").write_text(body)
    cache = str(tmp_path / "cache")
    short = analyze_paths([str(tmp_path / "huge.py")], Settings(cache_dir=cache, file_timeout=0.01))
    assert [f.code for f in short.findings] == ["VP900"]
    longer = analyze_paths([str(tmp_path / "huge.py")], Settings(cache_dir=cache, file_timeout=120))
    assert longer.findings == []


def test_a_time_out_is_never_stored(tmp_path, monkeypatch):
    """How long a file takes depends on how busy the machine was: the next run tries again."""
    body = "import torch\n" + "".join(f"def f{i}(x):\n    return x.item() + {i}\n" for i in range(3000))
    (tmp_path / "huge.py").write_text(body)
    (tmp_path / "small.py").write_text(
        "import torch\nmodel = model.cuda()\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n"
    )
    settings = Settings(cache_dir=str(tmp_path / "cache"), file_timeout=0.25, select=("VP201", "VP900"))
    first = analyze_paths([str(tmp_path)], settings)
    assert [(Path(f.path).name, f.line, f.code) for f in first.findings] == [("huge.py", 1, "VP900"), ("small.py", 6, "VP201")]
    assert first.findings[0].message == "analysis exceeded the per-file time limit of 0.25 s (--file-timeout)"
    analysed = analysed_paths(monkeypatch)
    assert rows(analyze_paths([str(tmp_path)], settings)) == rows(first)
    assert [Path(p).name for p in analysed] == ["huge.py"]  # small.py's result was stored


def test_valid_entries_are_hits(tmp_path, monkeypatch):
    folder, cache = project(tmp_path), tmp_path / "cache"
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    analysed = analysed_paths(monkeypatch)
    for entry in entries(cache):
        if entry.name.startswith("run-"):
            entry.unlink()  # per-file entries only: each file's result and heat summary
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    assert analysed == []


def forge_empty_results(cache: Path) -> int:
    """Valid entries with no findings, signed with this user's key: what only someone holding
    the key could write."""
    forged = 0
    for entry in entries(cache):
        for kind in (AnalysisResult, FileResult):
            try:
                value = load(entry, kind)
            except cache_format.Invalid:
                continue
            if kind is AnalysisResult:
                value = AnalysisResult([replace(f, findings=[]) for f in value.files])
            else:
                value = replace(value, findings=[])
            entry.write_bytes(cache_format.dumps(value, signing_key(), entry_name(entry)))
            forged += 1
    return forged


def without_findings(body: bytes) -> bytes:
    """An entry's body with every finding taken out: what a forger wants the cache to say."""
    document = json.loads(body)
    for record in document["objects"]:
        if record[0] == "verifier.static.engine:FileResult":
            set_field(record, "findings", [])
    return json.dumps(document, separators=(",", ":")).encode()


FORGERS = {
    # How entries were signed before they carried a MAC: anyone could sign them again.
    "checksum": lambda entry, body: hashlib.sha256(body).hexdigest().encode(),
    # A cache made on another machine, or by a pull request's own run: another user's key.
    "another key": lambda entry, body: cache_format.signature(os.urandom(32), entry_name(entry), body),
}


@pytest.mark.parametrize("forger", FORGERS, ids=list(FORGERS))
def test_an_entry_signed_again_without_the_key_is_a_miss_and_the_run_still_blocks(tmp_path, monkeypatch, forger):
    from verifier.cli import main

    folder = project(tmp_path)
    monkeypatch.chdir(folder)
    command = ["bad_train.py", "--isolated", "--no-report", "-q", "--cache-dir", "cache"]
    assert main(command) == 1
    for entry in entries(folder / "cache"):
        body = without_findings(entry.read_bytes().partition(b"\n")[2])
        entry.write_bytes(FORGERS[forger](entry, body) + b"\n" + body)
    assert main(command) == 1
    assert main(command) == 1  # the forged entries were replaced, not kept


def test_an_entry_moved_to_other_settings_is_a_miss(tmp_path):
    """The signature covers where an entry is stored: a result made under settings that find
    nothing cannot stand in for the result under the settings in use."""
    folder, cache = project(tmp_path), tmp_path / "cache"
    quiet = analyze_paths([str(folder)], Settings(cache_dir=str(cache), select=("VP900",)))
    assert quiet.findings == []
    (fingerprint,) = [p for p in cache.iterdir() if p.is_dir()]
    (quiet_folder,) = list(fingerprint.iterdir())
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    (used_folder,) = [p for p in fingerprint.iterdir() if p != quiet_folder]
    shutil.rmtree(used_folder)
    shutil.copytree(quiet_folder, used_folder)
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold) != []


def test_an_oversized_entry_is_a_miss_without_being_read(tmp_path):
    """A 150 MB entry (sparse: it takes no disk) is refused by its size, before any of it is read."""
    import tracemalloc

    folder, cache = project(tmp_path), tmp_path / "cache"
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder / "good_train.py")], settings)
    stored = entries(cache)
    for entry in stored:
        with open(entry, "wb") as handle:
            handle.truncate(150 * 1024 * 1024)
    tracemalloc.start()
    try:
        warm = analyze_paths([str(folder / "good_train.py")], settings)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows(warm) == rows(cold) and warm.internal_errors == []
    assert peak < 20 * 1024 * 1024
    assert all(entry.stat().st_size < 1024 * 1024 for entry in stored)  # replaced by the run


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True, capture_output=True
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("environment", [{}, {"GIT_GLOB_PATHSPECS": "1"}], ids=["plain", "glob-pathspecs"])
def test_a_cache_committed_to_git_is_not_used(tmp_path, capsys, monkeypatch, environment):
    # With GIT_GLOB_PATHSPECS exported, git refused the question and the answer read "not tracked".
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    folder = project(tmp_path)
    cache = folder / ".verify_perf_cache"
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    assert forge_empty_results(cache) >= 3
    assert analyze_paths([str(folder)], settings).findings == []  # what entries signed with the key can do
    git(folder, "init", "-q")
    git(folder, "add", "-f", ".")
    git(folder, "commit", "-q", "-m", "a cache that hides every finding")
    capsys.readouterr()
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    assert capsys.readouterr().err == (
        f"verify-perf: warning: not using the cache {cache}: it holds files committed to git, and entries "
        f"from a commit could hide findings (untrack them with `git rm -r --cached {cache}`)\n"
    )
    git(folder, "rm", "-r", "-q", "--cached", ".verify_perf_cache")
    assert analyze_paths([str(folder)], settings).findings == []  # untracked again: the cache is used


def resign_heat_models(cache: Path, change) -> int:
    """Edit every stored heat summary with `change(fields)` and sign it again with this user's
    key: the entry passes the signature and the format checks."""
    changed = 0
    for entry in entries(cache):
        _, _, body = entry.read_bytes().partition(b"\n")
        document = json.loads(body)
        for kind, fields in document["objects"]:
            if kind == "verifier.static.heat:HeatModel":
                change(fields)
                changed += 1
        body = json.dumps(document, separators=(",", ":")).encode()
        entry.write_bytes(cache_format.signature(signing_key(), entry_name(entry), body) + b"\n" + body)
    return changed


@pytest.mark.parametrize("change", [
    lambda fields: fields.update(_module_callz=fields.pop("_module_calls")),  # found by the 5,000-example run
    lambda fields: fields.update(_module_loops=0),
    lambda fields: fields.update(_functions={"dict": [[1, 2]]}),
], ids=["attribute-renamed", "wrong-type", "wrong-content"])
def test_a_re_signed_heat_summary_that_does_not_work_is_a_miss_and_is_replaced(tmp_path, monkeypatch, change):
    folder, cache = project(tmp_path), tmp_path / "cache"
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    for entry in entries(cache):
        if entry.name.startswith("run-"):
            entry.unlink()  # the per-file entries carry the heat summaries
    assert resign_heat_models(cache, change) == 2
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    analysed = analysed_paths(monkeypatch)
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    assert analysed == []  # the run that found them replaced the entries with working ones


def test_a_file_whose_finding_sits_under_a_branch_is_cached_too(tmp_path, monkeypatch):
    # The branch of a candidate is kept by its kind and text, never its syntax node: a summary
    # holding a node could not be stored, and the file would be analysed again on every run.
    folder, cache = tmp_path / "project", tmp_path / "cache"
    folder.mkdir()
    (folder / "train.py").write_text(
        "import subprocess\nimport torch\n\n\ndef train(model, loader, optimizer, args):\n"
        "    for x in loader:\n        model(x.cuda()).sum().backward()\n        optimizer.step()\n"
        "        if args.report_gpu:\n            subprocess.run(['nvidia-smi'])\n"
        "        if x.sum() > 0:\n            torch.cuda.empty_cache()\n"
    )
    (folder / "other.py").write_text("x = 1\n")
    settings = Settings(cache_dir=str(cache))
    cold = analyze_paths([str(folder)], settings)
    assert [(f.code, f.line) for f in cold.findings] == [("VP306", 6), ("VP102", 7), ("VP204", 10), ("VP403", 12)]
    (folder / "other.py").write_text("x = 2\n")  # the whole run's entry no longer fits
    analysed = analysed_paths(monkeypatch)
    assert rows(analyze_paths([str(folder)], settings)) == rows(cold)
    assert analysed == [str(folder / "other.py")]
