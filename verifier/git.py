"""Running git: bytes in and out, so file names with spaces, quotes, tabs or non-UTF-8 bytes
survive (`-z` output, literal pathspecs, names decoded with the file system's own rules)."""

from __future__ import annotations

import os
import subprocess

from verifier.errors import UsageError


def run_git(folder: str, *args: str, purpose: str = "--diff") -> bytes:
    """git's standard output; a failure is a usage error naming `purpose` and git's last line."""
    completed = _run(folder, args, purpose)
    if completed.returncode != 0:
        detail = os.fsdecode(completed.stderr).strip().splitlines()
        raise UsageError(f"{purpose}: git failed in {folder}: {detail[-1] if detail else 'no message'}")
    return completed.stdout


def git_output(folder: str, *args: str, purpose: str = "--diff") -> bytes | None:
    """git's standard output, or None when the command fails (for questions, not for work)."""
    completed = _run(folder, args, purpose)
    return completed.stdout if completed.returncode == 0 else None


def top_level(path: str) -> str | None:
    """The git work tree holding `path`, or None outside one (or without git)."""
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    try:
        completed = subprocess.run(
            ["git", "-C", folder, "rev-parse", "--show-toplevel"], capture_output=True, check=False
        )
    except OSError:
        return None
    if completed.returncode != 0:
        return None
    return os.fsdecode(completed.stdout.rstrip(b"\n")) or None


def nul_separated(output: bytes) -> list[str]:
    """`-z` output as file names (undecodable bytes kept as surrogates, as os.listdir does)."""
    return [os.fsdecode(part) for part in output.split(b"\0") if part]


# Variables that change what `git diff` prints whatever its options ask (GIT_DIFF_OPTS=-u5 wins
# over --unified=0), or how it reads a path (git refuses the other pathspec settings beside
# --literal-pathspecs): git's answers must not depend on them.
_PRESENTATION = frozenset({
    "GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF",
    "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_LITERAL_PATHSPECS",
})


def git_environment() -> dict[str, str]:
    """The environment git runs in: this process's, less what changes its answers."""
    return {name: value for name, value in os.environ.items() if name not in _PRESENTATION}


def _run(folder: str, args: tuple[str, ...], purpose: str) -> subprocess.CompletedProcess:
    environment = git_environment()
    try:
        return subprocess.run(
            ["git", "--literal-pathspecs", "-C", folder, *args], capture_output=True, check=False, env=environment
        )
    except FileNotFoundError:
        raise UsageError(f"{purpose} needs git, which is not on PATH") from None
