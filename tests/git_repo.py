"""Git for tests that build a repository: a fixed identity, no signing, output captured."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(folder: Path | str, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=folder, check=True, capture_output=True,
    )
