"""Hostile and forged caches, and cache folders aimed at the user's own files.

Forged: a cache filled by an attacker (signed with a key of their own, as a committed or restored
cache folder is) and then edited (findings removed and signed again, truncated, replaced by
random bytes, a giant, a link to a user's file or a device, a FIFO); entries of the user's own
cache moved to another file's or setting's name; the cache's folders swapped for links. The run
must give exactly the result of a run without any cache.
Aimed at user folders: `--cache-dir` and $VERIFY_PERF_CACHE_DIR naming the home, a document
folder, the project, a file or a device, and `verify-perf clean` on each: refused or left alone,
never a file of the user's changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import importlib
import json
import os
import random
import shutil
from pathlib import Path

from tests.hostile.case import CACHED, KEY, Case
from tests.hostile.sandbox import Sandbox
from tests.hostile.sources import GOOD, TRAIN
from tests.hostile.trees import JSON, combine, files, link

CATEGORY = "caches"
CACHE = ".verify_perf_cache"
ATTACKER_KEY = "/attacker/key"


def _attacker_env(sandbox: Sandbox) -> dict[str, str]:
    return {"VERIFY_PERF_CACHE_KEY_FILE": str(sandbox.path(ATTACKER_KEY))}


def _fill(sandbox: Sandbox, env: dict[str, str] | None = None, *extra: str) -> None:
    completed = sandbox.verify(".", *JSON, *extra, env=env)
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"filling the cache failed: {completed.stderr.decode(errors='replace')[-300:]}")


def _entries(sandbox: Sandbox) -> list[Path]:
    return sorted(p for p in sandbox.path(CACHE).rglob("*.json") if p.is_file() and not p.is_symlink())


def _signed(key: bytes, entry: Path, body: bytes) -> bytes:
    """The entry signed as verify-perf signs it: HMAC over its place in the cache and its body."""
    parts = entry.parts[-4:]
    name = "/".join((parts[0], parts[1], entry.stem))
    mac = hmac.new(key, name.encode() + b"\0", hashlib.sha256)
    mac.update(body)
    return mac.hexdigest().encode() + b"\n" + body


def _stripped(body: bytes) -> bytes:
    """The body with every file's findings removed (what an attacker wants a cache to say)."""
    document = json.loads(body)
    for kind, fields in document["objects"]:
        names = _field_names(kind)
        for name in ("findings", "suppressed"):
            if names is None and name in fields:
                fields[name] = []
            elif names is not None and name in names:
                fields[names.index(name)] = []
    return json.dumps(document, separators=(",", ":")).encode()


def _field_names(kind: str) -> list[str] | None:
    """A stored dataclass's field names, in the order an entry lists their values (None for
    another class, whose attributes an entry names)."""
    module, _, qualname = kind.partition(":")
    cls = getattr(importlib.import_module(module), qualname, None)
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else None


def _body(entry: Path) -> bytes:
    return entry.read_bytes().partition(b"\n")[2]


# Each edit takes (sandbox, entry) and rewrites the entry as an attacker would.
def _resigned_with_attacker_key(sandbox, entry) -> None:
    entry.write_bytes(_signed(sandbox.path(ATTACKER_KEY).read_bytes(), entry, _stripped(_body(entry))))


def _resigned_with_checksum(sandbox, entry) -> None:
    body = _stripped(_body(entry))
    entry.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _stripped_keeping_signature(sandbox, entry) -> None:
    signature = entry.read_bytes().partition(b"\n")[0]
    entry.write_bytes(signature + b"\n" + _stripped(_body(entry)))


def _resigned_with_empty_key(sandbox, entry) -> None:
    entry.write_bytes(_signed(b"", entry, _stripped(_body(entry))))


def _resigned_with_zero_key(sandbox, entry) -> None:
    entry.write_bytes(_signed(bytes(32), entry, _stripped(_body(entry))))


def _truncated(sandbox, entry) -> None:
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])


def _emptied(sandbox, entry) -> None:
    entry.write_bytes(b"")


def _random_bytes(sandbox, entry) -> None:
    entry.write_bytes(random.Random(entry.name).randbytes(4096))


def _pickle(sandbox, entry) -> None:
    entry.write_bytes(b"\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94.")


def _giant(sandbox, entry) -> None:
    with open(entry, "r+b") as handle:
        handle.truncate(150 << 20)


def _untrusted_class(sandbox, entry) -> None:
    document = json.loads(_body(entry))
    document["objects"][0][0] = "os:system"
    entry.write_bytes(_signed(sandbox.path(ATTACKER_KEY).read_bytes(), entry, json.dumps(document).encode()))


def _replaced(kind: str):
    def edit(sandbox, entry) -> None:
        entry.unlink()
        if kind == "thesis":
            os.symlink(sandbox.home / "Documents" / "thesis.txt", entry)
        elif kind == "zero":
            os.symlink("/dev/zero", entry)
        elif kind == "fifo":
            os.mkfifo(entry)
        elif kind == "folder":
            entry.mkdir()
        elif kind == "loop":
            os.symlink(entry.name, entry)
        elif kind == "hard-link":
            os.link(sandbox.home / "Documents" / "thesis.txt", entry)

    return edit


EDITS = {
    "resigned-attacker-key": _resigned_with_attacker_key,
    "resigned-checksum": _resigned_with_checksum,
    "stripped-keeping-signature": _stripped_keeping_signature,
    "resigned-empty-key": _resigned_with_empty_key,
    "resigned-zero-key": _resigned_with_zero_key,
    "truncated": _truncated,
    "emptied": _emptied,
    "random-bytes": _random_bytes,
    "pickle": _pickle,
    "giant-150-mib": _giant,
    "untrusted-class": _untrusted_class,
    "link-to-thesis": _replaced("thesis"),
    "link-to-zero": _replaced("zero"),
    "fifo": _replaced("fifo"),
    "folder": _replaced("folder"),
    "link-loop": _replaced("loop"),
    "hard-link-to-thesis": _replaced("hard-link"),
}


def _forged(name: str, edit, which: str, *, attacker: bool, fast: bool = False, extra: tuple[str, ...] = ()) -> Case:
    """TRAIN's cache filled (by the attacker, or by the user), then `which` entries edited."""

    def build(sandbox: Sandbox) -> None:
        sandbox.write("train.py", TRAIN)
        sandbox.write("helper.py", "import torch\n\n\ndef log(x):\n    print(x.item())\n")
        _fill(sandbox, _attacker_env(sandbox) if attacker else None, *extra)
        for entry in _entries(sandbox):
            if which == "all" or (which == "run") == entry.name.startswith("run-"):
                edit(sandbox, entry)

    reference = files({"train.py": TRAIN, "helper.py": "import torch\n\n\ndef log(x):\n    print(x.item())\n"})
    return Case(CATEGORY, name, build, (".", *JSON, *extra), 1, outputs=CACHED, reference=reference,
                reference_argv=(".", *JSON, *extra, "--no-cache"), forged=True, fast=fast)


def _moved(name: str, move, *, fast: bool = False) -> Case:
    """Entries of the user's own cache, signed with the user's key, moved to other names."""
    return Case(CATEGORY, name, move, (".", *JSON), 1, outputs=CACHED, reference=files({"train.py": TRAIN}),
                reference_argv=(".", *JSON, "--no-cache"), forged=True, fast=fast)


def _good_entries_as_bad(sandbox: Sandbox) -> None:
    """The clean code's entries copied over the blocking code's, each kind to the same kind."""
    sandbox.write("train.py", GOOD)
    _fill(sandbox)
    good = {p: p.read_bytes() for p in _entries(sandbox)}
    sandbox.write("train.py", TRAIN)
    _fill(sandbox)
    bad = [p for p in _entries(sandbox) if p not in good]
    for kind in (True, False):
        sources = [data for p, data in good.items() if p.name.startswith("run-") is kind]
        for entry in (p for p in bad if p.name.startswith("run-") is kind):
            if sources:
                entry.write_bytes(sources[0])


def _other_settings_as_default(sandbox: Sandbox) -> None:
    """Entries made under `--select VP3` (no VP203 there) moved into the default settings' folder."""
    sandbox.write("train.py", TRAIN)
    _fill(sandbox, None, "--select", "VP3")
    narrow = _entries(sandbox)
    _fill(sandbox)
    for entry in _entries(sandbox):
        if entry in narrow:
            continue
        same_kind = [p for p in narrow if p.name.startswith("run-") == entry.name.startswith("run-")]
        if same_kind:
            entry.write_bytes(same_kind[0].read_bytes())
    for entry in narrow:  # the narrow ones also placed under the default folder's names
        for folder in {p.parent.parent for p in _entries(sandbox)} - {entry.parent.parent}:
            target = folder / entry.parent.name / entry.name
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(entry, target)


def _other_tree_entries(sandbox: Sandbox) -> None:
    """The user's cache of the clean code in another folder, copied whole into this project."""
    sandbox.write("/elsewhere/train.py", GOOD)
    sandbox.verify(".", *JSON, cwd="/elsewhere")
    sandbox.write("train.py", TRAIN)
    shutil.copytree(sandbox.path("/elsewhere/" + CACHE), sandbox.path(CACHE))


def _folders_as_links(level: int):
    """The cache's folder at `level` (1: fingerprint, 2: settings, 3: shard) swapped for a link
    to a folder the attacker filled."""

    def build(sandbox: Sandbox) -> None:
        sandbox.write("train.py", TRAIN)
        _fill(sandbox)
        entry = _entries(sandbox)[0]
        folder = entry.parents[3 - level]
        shutil.copytree(folder, sandbox.path("/planted"), symlinks=True)
        for planted in sandbox.path("/planted").rglob("*.json"):
            planted.write_bytes(b"0" * 64 + b"\n{}")
        shutil.rmtree(folder)
        os.symlink(sandbox.path("/planted"), folder)

    return build


def _roots() -> list[Case]:
    """Cache roots aimed at the user's folders or at things that are not folders."""
    train = files({"train.py": TRAIN})
    refused = [
        ("cache-dir-home", ("--cache-dir", "@HOME@"), {}),
        ("cache-dir-documents", ("--cache-dir", "@HOME@/Documents"), {}),
        ("cache-dir-project", ("--cache-dir", "."), {}),
        ("cache-dir-parent", ("--cache-dir", ".."), {}),
        ("cache-dir-root", ("--cache-dir", "/"), {}),
        ("cache-dir-proc", ("--cache-dir", "/proc"), {}),
        ("environment-home", (), {"VERIFY_PERF_CACHE_DIR": "@HOME@"}),
        ("environment-project", (), {"VERIFY_PERF_CACHE_DIR": "@PROJECT@"}),
        ("environment-trailing-slash", (), {"VERIFY_PERF_CACHE_DIR": "@HOME@/Documents/"}),
    ]
    cases = [Case(CATEGORY, f"root:{name}", train, (".", *JSON, *argv), 2, env=env, outputs=KEY, stderr="refusing",
                  fast=name == "cache-dir-home") for name, argv, env in refused]
    uncached = [
        ("cache-dir-file", combine(train, files({"plain.txt": "mine\n"})), ("--cache-dir", "plain.txt")),
        ("cache-dir-dev-null", train, ("--cache-dir", "/dev/null")),
        ("cache-dir-link-to-empty", combine(train, link("cachelink", "@ROOT@/empty")), ("--cache-dir", "cachelink")),
        ("cache-dir-link-slash-to-home", combine(train, link("homelink", "@HOME@")), ("--cache-dir", "homelink/")),
        ("default-cache-is-link-to-home", combine(train, link(CACHE, "@HOME@")), ()),
        ("default-cache-is-file", combine(train, files({CACHE: "not a folder\n"})), ()),
        ("default-cache-is-dangling-link", combine(train, link(CACHE, "@ROOT@/nowhere")), ()),
    ]

    def empty(sandbox) -> None:
        sandbox.path("/empty").mkdir()

    cases += [Case(CATEGORY, f"root:{name}", combine(build, empty), (".", *JSON, *argv), 1, outputs=KEY,
                   stderr="not using the cache", must_find=(("train.py", "VP203"),)) for name, build, argv in uncached]

    def tagged_with_user_files(sandbox) -> None:
        sandbox.write(f"{CACHE}/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                      "# This file is a cache directory tag created by verify-perf.\n")
        sandbox.write(f"{CACHE}/notes.txt", "mine\n")
        sandbox.write(f"{CACHE}/ab/keep.json", "{}\n")

    cases.append(Case(CATEGORY, "root:tagged-folder-with-user-files", combine(train, tagged_with_user_files),
                      (".", *JSON), 1, outputs=CACHED, must_find=(("train.py", "VP203"),),
                      protected=(f"{CACHE}/notes.txt", f"{CACHE}/ab/keep.json")))
    new_folder = Case(CATEGORY, "root:new-deep-folder", train, (".", *JSON, "--cache-dir", "a/b/c/cache"), 1,
                      outputs=KEY + ("a/*",), must_find=(("train.py", "VP203"),))
    return [*cases, new_folder]


def _clean_cases() -> list[Case]:
    train = files({"train.py": TRAIN})

    def filled(sandbox) -> None:
        sandbox.write("train.py", TRAIN)
        _fill(sandbox)

    def filled_with(*extras):
        def build(sandbox) -> None:
            filled(sandbox)
            for step in extras:
                step(sandbox)

        return build

    def entry_link_to_thesis(sandbox) -> None:
        entry = _entries(sandbox)[0]
        entry.unlink()
        os.symlink(sandbox.home / "Documents" / "thesis.txt", entry)

    def shard_link_to_documents(sandbox) -> None:
        shard = _entries(sandbox)[0].parent
        shutil.rmtree(shard)
        os.symlink(sandbox.home / "Documents", shard)

    def user_file_inside(sandbox) -> None:
        sandbox.write(f"{CACHE}/my-notes.txt", "mine\n")
        shard = _entries(sandbox)[0].parent
        (shard / "README").write_text("mine\n")

    def forged_tag_on_documents(sandbox) -> None:
        sandbox.write("~/Documents/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                      "# This file is a cache directory tag created by verify-perf.\n")

    cases = [
        ("clean-default", filled, ("clean",), {}, 0, (f"{CACHE}/*",)),
        ("clean-nothing-there", train, ("clean",), {}, 0, ()),
        ("clean-home", filled, ("clean", "--cache-dir", "@HOME@"), {}, 2, ()),
        ("clean-documents", filled, ("clean", "--cache-dir", "@HOME@/Documents"), {}, 2, ()),
        ("clean-project", filled, ("clean", "--cache-dir", "."), {}, 2, ()),
        ("clean-root", filled, ("clean", "--cache-dir", "/"), {}, 2, ()),
        ("clean-environment-home", filled, ("clean",), {"VERIFY_PERF_CACHE_DIR": "@HOME@"}, 2, ()),
        ("clean-environment-project", filled, ("clean",), {"VERIFY_PERF_CACHE_DIR": "@PROJECT@"}, 2, ()),
        ("clean-entry-link-to-thesis", filled_with(entry_link_to_thesis), ("clean",), {}, 0, (f"{CACHE}/*",)),
        ("clean-shard-link-to-documents", filled_with(shard_link_to_documents), ("clean",), {}, 0, (f"{CACHE}/*",)),
        ("clean-user-files-inside", filled_with(user_file_inside), ("clean",), {}, 0, (f"{CACHE}/*",)),
        ("clean-cache-is-link-to-home", combine(train, link(CACHE, "@HOME@")), ("clean",), {}, 2, ()),
        ("clean-named-link-to-home", combine(train, link("homelink", "@HOME@")),
         ("clean", "--cache-dir", "homelink/"), {}, 2, ()),
        ("clean-forged-tag-on-documents", filled_with(forged_tag_on_documents),
         ("clean", "--cache-dir", "@HOME@/Documents"), {}, 0, ("~/Documents/CACHEDIR.TAG",)),
        ("clean-file-named-like-cache", combine(train, files({CACHE: "mine\n"})), ("clean",), {}, 0, ()),
        ("clean-empty-name", filled, ("clean", "--cache-dir", ""), {}, 2, ()),
    ]
    built = []
    for name, build, argv, env, code, outputs in cases:
        built.append(Case(CATEGORY, name, build, argv, code, env=env, outputs=outputs,
                          protected=(f"{CACHE}/my-notes.txt", f"{CACHE}/*/README"),
                          fast=name in ("clean-home", "clean-entry-link-to-thesis")))
    return built


def cases() -> list[Case]:
    built = []
    for name, edit in EDITS.items():
        built.append(_forged(f"attacker:{name}:files", edit, "files", attacker=True,
                             fast=name in ("resigned-attacker-key", "giant-150-mib")))
        built.append(_forged(f"attacker:{name}:runs", edit, "run", attacker=True))
    for name in ("stripped-keeping-signature", "resigned-checksum", "truncated", "link-to-thesis", "giant-150-mib"):
        built.append(_forged(f"user:{name}:all", EDITS[name], "all", attacker=False))
    built.append(_forged("attacker:resigned:select-vp2", _resigned_with_attacker_key, "all", attacker=True,
                         extra=("--select", "VP2")))
    built.append(_moved("moved:clean-code-entries-as-blocking", _good_entries_as_bad, fast=True))
    built.append(_moved("moved:other-settings-entries", _other_settings_as_default))
    built.append(_moved("moved:other-folder-cache", _other_tree_entries))
    for level in (1, 2, 3):
        built.append(_moved(f"moved:folder-level-{level}-is-link", _folders_as_links(level)))
    return built + _roots() + _clean_cases()
