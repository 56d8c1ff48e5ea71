"""The training code the cases embed: a small loop that blocks (one HIGH finding at a known
line), its clean twin that passes, the bundled examples, and the corpus samples the mutation
cases start from. Each is what a user's repository would hold; none is ever run."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# VP203 HIGH at line 9 (a per-step synchronize): exit 1.
TRAIN = (
    "import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
    "        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n        torch.cuda.synchronize()\n"
)
TRAIN_BLOCKS = ("VP203", 9)
# The same loop written the recommended way: no finding, exit 0.
GOOD = (
    "import torch\n\n\ndef train(model, loader, optimizer, scaler):\n    for x, y in loader:\n"
    "        x = x.cuda(non_blocking=True)\n        y = y.cuda(non_blocking=True)\n"
    "        with torch.autocast(\"cuda\", dtype=torch.float16):\n            loss = model(x, y)\n"
    "        scaler.scale(loss).backward()\n        scaler.step(optimizer)\n        scaler.update()\n"
    "        optimizer.zero_grad(set_to_none=True)\n"
)
BAD_TRAIN = (ROOT / "examples" / "bad_train.py").read_text(encoding="utf-8")
GOOD_TRAIN = (ROOT / "examples" / "good_train.py").read_text(encoding="utf-8")
CORPUS = sorted((ROOT / "tests" / "corpus" / "samples").glob("*.py"))


def corpus() -> list[tuple[str, bytes]]:
    """(name, bytes) of every corpus sample and both examples, in a fixed order."""
    files = [(path.name, path.read_bytes()) for path in CORPUS]
    return files + [("bad_train.py", BAD_TRAIN.encode()), ("good_train.py", GOOD_TRAIN.encode())]


def python_rejects(source: str | bytes) -> bool:
    """True when Python's own parser refuses the module (a syntax error, a decoding error, a null
    byte): an INFO VP900 for verify-perf. Code the parser gives up on for its size (a RecursionError
    or MemoryError) is valid source that could not be looked at, so not rejected. Nothing is run."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, UnicodeError, LookupError):
        return True
    except (RecursionError, MemoryError):
        return False
    return False
