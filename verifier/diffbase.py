"""Diff mode judges a change by its effect: the merge base's findings, to compare with.

A change can make code it never touches hot (a step loop that starts calling an old helper), so
diff mode does not stop at changed lines: it analyses the merge base's own tree the way it
analyses the work tree (this run's settings, the same project-wide heat), and a finding is new
when the merge base did not have it (by identity, `verifier.report.identity`) or had it colder or
less severe, wherever it is.

The base's tree comes from git's facts only: `ls-tree` and `cat-file` of the commit, never a
checkout (no filters, hooks or attributes run). Its Python files and notebooks are written to a
temporary folder; a symbolic link is kept when it points inside the tree (others are left out),
and a file larger than `max-file-size` is written as a sparse file of its size, so the analysis
says of it what it says of the work tree's. The result is cached by commit in the results cache,
signed like every entry there: a second run against the same base reads it back.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace

from verifier.config import Settings
from verifier.errors import UsageError
from verifier.findings import Finding
from verifier.git import run_git
from verifier.gitdiff import EMPTY_TREE, merge_base, work_trees
from verifier.report.baseline import Baseline, StoredFinding, fingerprints
from verifier.scope import find_scope, relative_to_cwd
from verifier.static.discovery import PYTHON_SUFFIXES
from verifier.static.patterns import PathPattern

# Bump when what is cached changes: entries of another layout are then never read.
_CACHE_VERSION = "diffbase-1"
_FILE_MODES = (b"100644", b"100755")
_LINK_MODE = b"120000"


@dataclass(frozen=True)
class Tree:
    """One work tree and the commit its change is judged against."""

    top: str  # the work tree's real path
    commit: str


def base_of(
    ref: str,
    paths: Sequence[str],
    settings: Settings,
    *,
    root: str | None,
    force_exclude: bool,
) -> Baseline:
    """The merge base's findings under `paths` (heat from `root`, as this run takes it), as a
    baseline this run's findings are compared with."""
    trees = [Tree(os.path.realpath(top), merge_base(top, ref)) for top in work_trees(ref, paths)]
    key = _cache_key(trees, paths, root, force_exclude)
    cache = _open_cache(settings)
    try:
        records = cache.load(key, tuple) if cache is not None else None
        if records is None:
            records = _analysed(trees, paths, settings, root=root, force_exclude=force_exclude)
            if cache is not None:
                cache.store(key, records)
    finally:
        if cache is not None:
            cache.close()
    commits = ", ".join(tree.commit[:12] for tree in trees)
    return Baseline(f"merge base {commits}", tuple(_stored(record, trees) for record in records), None, None)


def _open_cache(settings: Settings):
    if not settings.cache_dir:
        return None
    from verifier.static.cache import open_cache

    return open_cache(settings.cache_dir, settings, [rule.code for rule in settings.selected_rules()])


def _cache_key(trees: list[Tree], paths: Sequence[str], root: str | None, force_exclude: bool) -> str:
    """Everything the base's findings depend on besides the settings and the tool, which name
    the cache folder: the commits, and where the paths and the root are in their trees."""
    places = [_in_tree(path, trees) for path in (*paths, *([root] if root else []))]
    text = repr((_CACHE_VERSION, [(t.top, t.commit) for t in trees], places, root is not None, force_exclude))
    return "base-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _in_tree(path: str, trees: list[Tree]) -> tuple[int, str] | None:
    """(index of the tree holding `path`, its path in that tree), None outside them all."""
    real = os.path.realpath(path)
    for index, tree in enumerate(trees):
        relative = os.path.relpath(real, tree.top)
        if relative == os.curdir or not (relative == os.pardir or relative.startswith(os.pardir + os.sep)):
            return index, relative
    return None


def _analysed(
    trees: list[Tree], paths: Sequence[str], settings: Settings, *, root: str | None, force_exclude: bool
) -> tuple:
    """The base's findings as records: (tree, path in it, line, code, name, severity, heat,
    first source line, fingerprint)."""
    from verifier.static.runner import analyze_files

    folder = tempfile.mkdtemp(prefix="verify-perf-base-")
    try:
        exports = [os.path.join(folder, str(index)) for index in range(len(trees))]
        for tree, export in zip(trees, exports):
            os.mkdir(export)
            if tree.commit != EMPTY_TREE:
                _export(tree, export, settings.max_file_size)

        def moved(path: str) -> str | None:
            place = _in_tree(path, trees)
            return None if place is None else os.path.normpath(os.path.join(exports[place[0]], place[1]))

        named = [p for p in (moved(path) for path in paths) if p is not None and os.path.lexists(p)]
        base_root = moved(root) if root else None
        if base_root is not None and not os.path.isdir(base_root):
            base_root = None
        if not named and base_root is None:
            return ()
        scope = find_scope(
            named or [base_root], [_moved_pattern(p, moved) for p in settings.exclude], root=base_root,
            force_exclude=force_exclude, boundary=base_root,
            # The export holds only the commit's files, which is git's view already.
            respect_ignore_files=False,
        )
        base_settings = replace(
            settings, cache_dir=None, exclude=tuple(_moved_pattern(p, moved) for p in settings.exclude),
            per_file_ignores=tuple((_moved_pattern(p, moved), codes) for p, codes in settings.per_file_ignores),
        )
        found: list[Finding] = analyze_files(scope.analysed, base_settings).findings
        printed = fingerprints(found)
        return tuple(_record(finding, printed[finding], exports) for finding in found)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _moved_pattern(pattern: PathPattern, moved) -> PathPattern:
    """A pattern anchored in the work tree, anchored at the same place in the exported tree."""
    if not pattern.anchor:
        return pattern
    anchor = moved(pattern.anchor)
    return replace(pattern, anchor=anchor) if anchor is not None else pattern


def _record(finding: Finding, fingerprint: str, exports: list[str]) -> tuple:
    # Not resolved: a finding at a link's path stays at the link's path.
    where = os.path.abspath(finding.path)
    index = next((i for i, export in enumerate(exports) if where.startswith(os.path.abspath(export) + os.sep)), 0)
    relative = os.path.relpath(where, os.path.abspath(exports[index]))
    first = finding.source.splitlines()[0] if finding.source else ""
    return (index, relative, finding.line, finding.code, finding.name, finding.severity.name, finding.heat.name,
            first, fingerprint)


def _stored(record: tuple, trees: list[Tree]) -> StoredFinding:
    index, relative, line, code, name, severity, heat, first, fingerprint = record
    path = os.path.normpath(relative_to_cwd(os.path.join(trees[index].top, relative)))
    return StoredFinding(fingerprint=fingerprint, code=code, name=name, severity=severity, path=path, line=line,
                         message="", source_key=first, heat=heat)


def _export(tree: Tree, folder: str, max_size: int | None) -> None:
    """The commit's Python files, notebooks and in-tree links, written below `folder`."""
    listing = run_git(tree.top, "ls-tree", "-r", "-z", "--full-tree", tree.commit)
    files, links = [], []
    for entry in listing.split(b"\0"):
        header, tab, name = entry.partition(b"\t")
        if not tab:
            continue
        mode, kind, sha = header.split(b" ")
        path = os.fsdecode(name)
        if kind != b"blob" or not _safe(path):
            continue
        if mode in _FILE_MODES and path.endswith(PYTHON_SUFFIXES):
            files.append((sha, path))
        elif mode == _LINK_MODE:
            links.append((sha, path))
    sizes = _sizes(tree.top, [sha for sha, _ in files + links])
    small = [(sha, path) for sha, path in files if max_size is None or sizes[sha] <= max_size]
    contents = _contents(tree.top, [sha for sha, _ in small + links])
    for sha, path in small:
        _write(folder, path, contents[sha])
    for sha, path in files:
        if max_size is not None and sizes[sha] > max_size:
            _write(folder, path, b"")
            os.truncate(os.path.join(folder, path), sizes[sha])  # sparse: as large, nothing stored
    for sha, path in links:
        target = os.fsdecode(contents[sha])
        inside = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if not os.path.isabs(target) and _safe(inside):
            os.makedirs(os.path.dirname(os.path.join(folder, path)), exist_ok=True)
            os.symlink(target, os.path.join(folder, path))


def _safe(path: str) -> bool:
    """A relative path that stays in the tree and names no git folder."""
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and all(
        part not in ("", ".", "..") and part.lower() != ".git" for part in parts
    )


def _write(folder: str, path: str, data: bytes) -> None:
    target = os.path.join(folder, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        with open(target, "xb") as handle:  # never through anything already there
            handle.write(data)
    except FileExistsError:
        pass  # two names one file system folds together: the first stays


def _sizes(top: str, shas: list[bytes]) -> dict[bytes, int]:
    output = _cat_file(top, "--batch-check", shas)
    sizes = {}
    for line in output.splitlines():
        parts = line.split(b" ")
        if len(parts) != 3:
            raise UsageError(f"--diff: git cannot read {os.fsdecode(parts[0])} in {top}")
        sizes[parts[0]] = int(parts[2])
    return sizes


def _contents(top: str, shas: list[bytes]) -> dict[bytes, bytes]:
    output = _cat_file(top, "--batch", shas)
    contents, position = {}, 0
    while position < len(output):
        end = output.index(b"\n", position)
        sha, _, size = output[position:end].split(b" ")
        start = end + 1
        contents[sha] = output[start : start + int(size)]
        position = start + int(size) + 1
    return contents


def _cat_file(top: str, mode: str, shas: list[bytes]) -> bytes:
    if not shas:
        return b""
    try:
        completed = subprocess.run(
            ["git", "-C", top, "cat-file", mode], input=b"\n".join(dict.fromkeys(shas)) + b"\n",
            capture_output=True, check=False,
        )
    except OSError as error:
        raise UsageError(f"--diff: git failed in {top}: {error}") from None
    if completed.returncode != 0:
        detail = os.fsdecode(completed.stderr).strip().splitlines()
        raise UsageError(f"--diff: git failed in {top}: {detail[-1] if detail else 'no message'}")
    return completed.stdout
