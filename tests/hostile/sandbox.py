"""A case's world: a project folder (the working directory), a fake home with files the user
cares about, and a private temporary folder, all under one folder; and snapshots of all three so
that any file created, changed or removed shows up.

The environment is built from nothing, so no setting of the machine running the sweep reaches
verify-perf: HOME and the signing key live in the fake home, git reads only the fake home's
configuration and never looks above the case's folder.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a user keeps at home: none of it may ever change.
HOME_FILES = {
    "Documents/thesis.txt": "Chapter 1. Seven years of work.\n",
    "Documents/notes.md": "# notes\n\nkeep\n",
    ".ssh/config": "Host *\n  IdentitiesOnly yes\n",
    ".bashrc": "export EDITOR=vi\n",
    "projects/other/train.py": "import torch\n",
}
_LARGE = 32 << 20
GIT_CONFIG = "[user]\n\tname = Sweep\n\temail = sweep@example.com\n[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = main\n"


@dataclass(frozen=True)
class Entry:
    kind: str
    mode: int
    content: str  # digest of a regular file, target of a link, "" otherwise


Snapshot = dict[str, Entry]


class Sandbox:
    """One case's folders: `root/project` (cwd), `root/home` (HOME) and `root/tmp` (TMPDIR)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "project"
        self.home = root / "home"
        self.tmp = root / "tmp"
        for folder in (self.project, self.home, self.tmp):
            folder.mkdir(parents=True)
        for name, text in HOME_FILES.items():
            self.write(f"~/{name}", text)
        self.write("~/.gitconfig", GIT_CONFIG)

    def path(self, name: str) -> Path:
        """`~/x` in the fake home, `/x` below the case's root, else in the project."""
        if name.startswith("~/"):
            return self.home / name[2:]
        if name.startswith("/"):
            return self.root / name[1:]
        return self.project / name

    def write(self, name: str, data: str | bytes) -> Path:
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            # The checkout first; the caller's own entries after it.
            "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH", "")))),
            "GIT_CEILING_DIRECTORIES": str(self.root),
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        for name, value in (extra or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def git(self, *args: str, cwd: str = "") -> None:
        subprocess.run(["git", *args], cwd=self.path(cwd) if cwd else self.project, env=self.env(),
                       check=True, capture_output=True, timeout=60)

    def verify(self, *argv: str, env: dict[str, str] | None = None, cwd: str = "") -> subprocess.CompletedProcess:
        """A run made while building the case (e.g. to fill a cache), not the one judged."""
        return subprocess.run([sys.executable, "-m", "verifier", *argv], cwd=self.path(cwd) if cwd else self.project,
                              env=self.env(env), capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=False)

    def snapshot(self) -> Snapshot:
        return snapshot(self.root)


def snapshot(root: Path) -> Snapshot:
    """Every path below `root` (links not followed; special files never opened)."""
    entries: Snapshot = {}
    for folder, folders, files in os.walk(root, followlinks=False):
        for name in folders + files:
            path = os.path.join(folder, name)
            entries[os.path.relpath(path, root)] = _entry(path)
    return entries


def _entry(path: str) -> Entry:
    status = os.lstat(path)
    mode = stat.S_IMODE(status.st_mode)
    if stat.S_ISLNK(status.st_mode):
        return Entry("link", 0, os.readlink(path))
    if stat.S_ISREG(status.st_mode) and status.st_size > _LARGE:
        # A planted giant (often sparse) is compared by its identity, not read.
        return Entry("file", mode, f"{status.st_size}:{status.st_ino}:{status.st_mtime_ns}")
    if stat.S_ISREG(status.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return Entry("file", mode, f"{status.st_size}:{digest.hexdigest()}")
    if stat.S_ISDIR(status.st_mode):
        return Entry("dir", mode, "")
    return Entry(stat.filemode(status.st_mode)[0], mode, "")


def differences(before: Snapshot, after: Snapshot) -> list[tuple[str, str]]:
    """(path, what happened) for each path created, removed or changed."""
    changes = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        what = "created" if old is None else "removed" if new is None else "changed"
        changes.append((path, what))
    return changes
