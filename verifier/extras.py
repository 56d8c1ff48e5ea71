"""Which optional parts of verify-perf are installed, and the exact command that adds the rest.

The base install is the static gate; `--dynamic` and `bench` need the `dynamic` extra (torch
and what the harness uses). Without it they stop with exit code 2 and a command that installs
the extra from wherever this copy came from (an index, a git URL, a wheel or a local folder),
read from the installer's record (PEP 610 `direct_url.json`). Nothing here imports torch.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shlex
import sys
from urllib.parse import unquote, urlparse

from verifier.errors import UsageError

DISTRIBUTION = "verify-perf"
DYNAMIC = "dynamic"
SERVER = "server"
# Without an installed distribution (a source tree), the module each extra is for.
_PROVIDES = {DYNAMIC: "torch", SERVER: "pygls"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def missing_for(extra: str = DYNAMIC) -> list[str]:
    """The distributions `extra` requires that are not installed (empty: the extra is usable)."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        # Run from a source tree that was never installed: the extra's main module is what matters.
        module = _PROVIDES.get(extra, extra)
        return [] if importlib.util.find_spec(module) is not None else [module]
    missing = []
    for requirement in requirements:
        requirement_name, _, marker = requirement.partition(";")
        if extra not in _EXTRA.findall(marker):
            continue
        name = _NAME.match(requirement_name.strip())
        if name is None or name.group() == DISTRIBUTION:
            continue
        try:
            importlib.metadata.version(name.group())
        except importlib.metadata.PackageNotFoundError:
            missing.append(name.group())
    return missing


def install_command(extra: str = DYNAMIC) -> str:
    """`python -m pip install ...` for this interpreter, from the source this copy came from."""
    return f"{shlex.quote(sys.executable)} -m pip install {_requirement(extra)}"


def require(extra: str, feature: str) -> None:
    """Stop with a usage error (exit 2) naming the install command when `extra` is missing."""
    missing = missing_for(extra)
    if missing:
        raise UsageError(
            f"{feature} needs the `{extra}` extra ({', '.join(missing)} not installed); "
            f"install it with: {install_command(extra)}"
        )


def _requirement(extra: str) -> str:
    # A source tree's own `*.egg-info` may be found first; the installer's record is elsewhere.
    records = (d.read_text("direct_url.json") for d in importlib.metadata.distributions(name=DISTRIBUTION))
    return requirement_for(next((r for r in records if r), None), extra)


def requirement_for(direct_url: str | None, extra: str) -> str:
    """The pip argument(s) that install `extra` from the source a `direct_url.json` names."""
    plain = shlex.quote(f"{DISTRIBUTION}[{extra}]")
    try:
        record = json.loads(direct_url) if direct_url else None
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return plain
    url = record["url"]
    vcs = record.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        revision = vcs.get("requested_revision") or vcs.get("commit_id")
        pinned = f"{vcs['vcs']}+{url}" + (f"@{revision}" if revision else "")
        return shlex.quote(f"{DISTRIBUTION}[{extra}] @ {pinned}")
    parsed = urlparse(url)
    if parsed.scheme == "file":
        path = unquote(parsed.path)
        editable = isinstance(record.get("dir_info"), dict) and record["dir_info"].get("editable")
        return ("-e " if editable else "") + shlex.quote(f"{path}[{extra}]")
    return shlex.quote(f"{DISTRIBUTION}[{extra}] @ {url}")
