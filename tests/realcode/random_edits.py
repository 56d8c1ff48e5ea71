"""Random edits of a source tree, for the checks that cached runs equal cold runs
(`tests/static/test_cache_identity.py`, `tests/realcode/cache_identity.py`). Standard library only."""

from __future__ import annotations

import random
from pathlib import Path

# Every kind, in the order a random choice draws from (the sequences a seed gives depend on it).
KINDS = ("comment", "sync", "delete", "rename", "function", "file")
# Edits that move no line: most leave every summary equal (the incremental pass's case).
IN_PLACE = ("trailing comment", "appended comment")

NEW_FUNCTION = """

def probe_{n}(loss):
    value = loss.item()
    torch.cuda.synchronize()
    return value
"""


def edit(root: Path, rng: random.Random, n: int, kinds: tuple[str, ...] = KINDS, new_file: str = "") -> str:
    """One random edit of one file under `root` (a comment line, a synchronising call, a deleted
    line, `loss` renamed, a new function, a comment at the end of a line or of the file) or a new
    file holding `new_file`; returns what it did."""
    path = rng.choice(sorted(root.rglob("*.py")))
    lines = path.read_text(encoding="utf-8", errors="surrogateescape").splitlines()
    kind = rng.choice(kinds)
    index = rng.randrange(len(lines)) if lines else 0
    indent = " " * (len(lines[index]) - len(lines[index].lstrip())) if lines else ""
    if kind == "comment":
        lines.insert(index, f"{indent}# edit {n}")
    elif kind == "sync":
        lines.insert(index + 1, f"{indent}torch.cuda.synchronize()")
    elif kind == "delete" and lines:
        del lines[index]
    elif kind == "rename":
        lines = [line.replace("loss", "objective") for line in lines]
    elif kind == "function":
        lines += NEW_FUNCTION.format(n=n).splitlines()
    elif kind == "trailing comment" and lines and not lines[index].rstrip().endswith("\\"):
        lines[index] += f"  # edit {n}"
    elif kind == "appended comment":
        lines.append(f"# edit {n}")
    elif kind == "file":
        path, lines = root / f"extra_{n}.py", new_file.splitlines()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
    return f"{kind} in {path.relative_to(root)} at line {index + 1}"
