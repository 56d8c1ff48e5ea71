"""Count the hostile inputs a verify-perf install gets wrong: a gate that fails open or loses a file.

    python tests/static/measure_fail_open.py /path/to/.venv/bin/verify-perf

Runs the given verify-perf (any checkout) as a user would, on deterministic inputs, and prints one
line per class: how many inputs were tried and how many failed, with the first failure. The
oracles are the issue-14 contract, not this checkout's own expectations:

- strings: bad_train.py plus one line that holds hostile text in a string, docstring, bytes,
  comment or f-string. Valid Python: the run must exit 1 with bad_train.py's own findings.
- code: bad_train.py plus `OK = <hostile expression>`. If this Python accepts the file, the run
  must exit 1 (its findings, or a HIGH VP900); if not, one INFO VP900 at Python's line.
- tree: a FIFO, a character device and a socket named `*.py` beside bad_train.py: each reported
  (VP900, never read), exit 1.
- severity: `severity = { VP900 = "HIGH" }` with a syntax error: exit 1.
- cache: a cache with forged, checksum-valid entries committed to git: bad_train.py's findings.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD_TRAIN = (ROOT / "examples" / "bad_train.py").read_text()
KINDS = {
    "open-brackets": lambda n: "(" * n,
    "closed-brackets": lambda n: "(" * n + "x" + ")" * n,
    "mixed-brackets": lambda n: "".join("([{"[i % 3] for i in range(n)),
    "and-chain": lambda n: " and ".join(["flag"] * max(n, 2)),
    "plus-chain": lambda n: " + ".join(["x"] * max(n, 2)),
    "unary": lambda n: "-" * n + "x",
    "calls": lambda n: "f(" * n + ")" * n,
    "subscripts": lambda n: "x" + "[0]" * n,
}
SIZES = (150, 201, 1500, 12_000)
PLACES = {
    "string": lambda t: f'BANNER = "{t}"',
    "docstring": lambda t: f'def banner():\n    """{t}"""',
    "bytes": lambda t: f"RAW = b'{t}'",
    "comment": lambda t: f"# {t}",
    "f-string": lambda t: "LABEL = f'{len(sys.argv)} " + t.replace("{", "{{").replace("}", "}}") + "'",
}


def run(tool: str, folder: Path, *argv: str) -> tuple[int, list[dict]]:
    completed = subprocess.run(
        [tool, ".", "--format", "json", "--no-report", "--file-timeout", "20", *argv],
        cwd=folder, capture_output=True, timeout=600,
    )
    try:
        findings = json.loads(completed.stdout)["findings"]
    except (ValueError, KeyError):
        findings = [{"error": completed.stderr.decode(errors="replace")[-300:]}]
    return completed.returncode, findings


def shape(findings: list[dict]) -> list[tuple]:
    return [(f.get("line"), f.get("code"), f.get("severity")) for f in findings]


def python_accepts(text: str) -> tuple[bool, int]:
    try:
        ast.parse(text)
    except SyntaxError as error:
        return False, error.lineno or 1
    except (RecursionError, MemoryError, ValueError):
        return True, 0  # undecided: fail closed is expected
    return True, 0


def main(tool: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="fail-open-"))
    reference = work / "reference"
    reference.mkdir()
    (reference / "bad_train.py").write_text(BAD_TRAIN)
    _, alone = run(tool, reference, "--isolated", "--no-cache")
    expected = shape(alone)
    tallies: dict[str, list] = {}

    def tally(name: str, ok: bool, what: str) -> None:
        entry = tallies.setdefault(name, [0, 0, ""])
        entry[0] += 1
        if not ok:
            entry[1] += 1
            entry[2] = entry[2] or what

    case = 0

    def folder_with(text: str) -> Path:
        nonlocal case
        case += 1
        folder = work / f"case{case}"
        folder.mkdir()
        (folder / "bad_train.py").write_text(text)
        return folder

    for kind, make in KINDS.items():
        for size in SIZES:
            for place, wrap in PLACES.items():
                folder = folder_with(BAD_TRAIN + "\n" + wrap(make(size)) + "\n")
                code, found = run(tool, folder, "--isolated", "--no-cache")
                tally("strings", code == 1 and shape(found) == expected, f"{kind} x{size} in a {place}: exit {code}, {shape(found)[:2]}")
            text = BAD_TRAIN + "\nOK = " + make(size) + "\n"
            folder = folder_with(text)
            code, found = run(tool, folder, "--isolated", "--no-cache")
            valid, line = python_accepts(text)
            if valid:
                ok = code == 1
            else:
                ok = shape(found) == [(line, "VP900", "INFO")]
            tally("code", ok, f"{kind} x{size} as code (Python {'accepts' if valid else 'rejects'}): exit {code}, {shape(found)[:2]}")

    folder = folder_with(BAD_TRAIN)
    os.mkfifo(folder / "pipe.py")
    os.symlink("/dev/zero", folder / "zero_link.py")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock.py"))
    try:
        code, found = run(tool, folder, "--isolated", "--no-cache")
    finally:
        server.close()
    reported = {Path(f.get("path", "")).name for f in found if f.get("code") == "VP900"}
    for name in ("pipe.py", "zero_link.py", "sock.py"):
        tally("tree", code == 1 and name in reported, f"{name} not reported (exit {code})")

    folder = folder_with("import torch\ndef train(:\n    pass\n")
    (folder / "pyproject.toml").write_text('[tool.verify-perf]\nseverity = { VP900 = "HIGH" }\n')
    code, found = run(tool, folder, "--no-cache")
    tally("severity", code == 1, f"VP900 override ignored: exit {code}, {shape(found)}")

    if shutil.which("git"):
        folder = folder_with(BAD_TRAIN)
        run(tool, folder, "--isolated")
        forged = forge(folder / ".verify_perf_cache")
        git = ["git", "-c", "user.name=m", "-c", "user.email=m@m"]
        subprocess.run([*git, "init", "-q"], cwd=folder, check=True)
        subprocess.run([*git, "add", "-f", "."], cwd=folder, check=True)
        subprocess.run([*git, "commit", "-qm", "cache"], cwd=folder, check=True)
        code, found = run(tool, folder, "--isolated")
        tally("cache", forged > 0 and code == 1 and shape(found) == expected, f"{forged} forged entries: exit {code}, {len(found)} findings")

    shutil.rmtree(work)
    total = failed = 0
    for name, (tried, bad, first) in tallies.items():
        total, failed = total + tried, failed + bad
        print(f"{name:9} {tried:4} tried {bad:4} failed" + (f"   first: {first}" if first else ""))
    print(f"{'all':9} {total:4} tried {failed:4} failed")


def forge(cache: Path) -> int:
    """Rewrite every entry to hold no findings, with a valid checksum (the format is plain JSON)."""
    import hashlib

    forged = 0
    for entry in cache.rglob("*.json"):
        digest, _, body = entry.read_bytes().partition(b"\n")
        document = json.loads(body)
        for kind, fields in document.get("objects", []):
            if kind.endswith(":FileResult"):
                fields["findings"] = []
        body = json.dumps(document, separators=(",", ":")).encode()
        entry.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        forged += 1
    return forged


if __name__ == "__main__":
    main(sys.argv[1])
