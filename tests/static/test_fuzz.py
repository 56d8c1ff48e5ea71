"""Property-based robustness: odd, broken and hostile sources never crash the analyzer.

The default run tries a few hundred cases per property; `VERIFY_PERF_FUZZ_EXAMPLES=10000
pytest tests/static/test_fuzz.py` runs the full campaign quoted in the closing notes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier.config import Settings
from verifier.rules import all_rules
from verifier.static.engine import analyze_file
from verifier.static.runner import analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = [(EXAMPLES / name).read_bytes() for name in ("bad_train.py", "good_train.py")]
RULES = list(all_rules())
EXAMPLES_PER_PROPERTY = int(os.environ.get("VERIFY_PERF_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES_PER_PROPERTY,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Constructs from Python 3.8 to 3.13 (the analyzer must parse them or report VP900, never crash).
SNIPPETS = [
    "if (n := len(xs)) > 3:\n    pass\n",
    "def f(a, /, b, *, c):\n    return a\n",
    "match command:\n    case [x, *rest] if x:\n        pass\n    case {'k': v}:\n        pass\n    case _:\n        pass\n",
    "try:\n    pass\nexcept* ValueError as group:\n    pass\n",
    "type Vector = list[float]\n",
    "def first[T](xs: list[T]) -> T:\n    return xs[0]\n",
    "class Box[T]:\n    pass\n",
    "print(f\"{'nested' + f'{x!r:>{width}}'}\")\n",
    "async def g():\n    async with lock:\n        async for x in stream:\n            await x\n",
    "lambda: (yield)\n",
    "x = [*a, *b]\ny = {**c, **d}\n",
    "@decorator.attr[0](arg)\ndef h(): ...\n",
    "global_value: int = 3\n",
    "del a[0], b.c\n",
    "with (open(a) as f, open(b) as g):\n    pass\n",
]
TORCH_LOOP = "import torch\nfor x in loader:\n    loss = model(x.cuda(non_blocking=True)).sum()\n    loss.backward()\n"


def check(path: Path) -> None:
    result = analyze_file(str(path), RULES, Settings(prefilter=False, file_timeout=None))
    assert result.internal_error is None, result.internal_error
    codes = [f.code for f in result.findings]
    if "VP900" in codes:
        assert codes == ["VP900"]
    json.loads(json.dumps([f.to_dict() for f in result.findings]))


@FUZZ
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_mutated_training_scripts(tmp_path_factory, seed, data):
    source = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 6))):
        position = data.draw(st.integers(0, len(source)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = data.draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
            [b"\x00", b"\r", b"\r\n", b"\x0c", b"\t", b"\xef\xbb\xbf", b"(", b")", b":", b"\n    ", b"'", b'"""', b"\\"]
        ))
        if action == "insert":
            source[position:position] = chunk
        elif action == "delete":
            del source[position : position + len(chunk)]
        else:
            source[position : position + len(chunk)] = chunk
    path = tmp_path_factory.mktemp("fuzz") / "mutated.py"
    path.write_bytes(bytes(source))
    check(path)


@FUZZ
@given(
    parts=st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=5),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    bom=st.booleans(),
    cookie=st.sampled_from(["", "# -*- coding: latin-1 -*-\n", "# coding: utf-8\n", "# coding: bogus-codec\n"]),
)
def test_syntax_across_python_versions_encodings_and_newlines(tmp_path_factory, parts, newline, bom, cookie):
    text = cookie + TORCH_LOOP + "".join(parts)
    data = text.replace("\n", newline).encode("utf-8")
    if bom:
        data = b"\xef\xbb\xbf" + data
    path = tmp_path_factory.mktemp("fuzz") / "versions.py"
    path.write_bytes(data)
    check(path)


@settings(FUZZ, max_examples=max(10, EXAMPLES_PER_PROPERTY // 10))
@given(depth=st.integers(1, 3000), kind=st.sampled_from(["paren", "list", "unary", "binary", "call", "string"]))
def test_deep_nesting_and_huge_literals(tmp_path_factory, depth, kind):
    expression = {
        "paren": "(" * depth + "x" + ")" * depth,
        "list": "[" * depth + "]" * depth,
        "unary": "-" * depth + "x",
        # libcst's parser is super-linear in operator chains (2000 terms: ~40 s): a known limit.
        "binary": " + ".join(["x.item()"] * min(depth, 300)),
        "call": "f(" * depth + ")" * depth,
        "string": "'" + "a" * depth * 100 + "'",
    }[kind]
    path = tmp_path_factory.mktemp("fuzz") / "deep.py"
    path.write_text(TORCH_LOOP + f"    y = {expression}\n")
    check(path)


def test_folder_with_symlink_loops_dangling_links_and_fifos(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TORCH_LOOP + "    print(loss.item())\n")
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "missing.py", tmp_path / "pkg" / "dangling.py")
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201", "VP900")))
    rows = [(Path(f.path).name, f.code, f.severity.name) for f in result.findings]
    # The FIFO named like Python is listed and reported (never read); the looping folder link is not walked.
    assert rows == [("dangling.py", "VP900", "INFO"), ("pipe.py", "VP900", "INFO"), ("train.py", "VP201", "MEDIUM")]
    assert result.internal_errors == []
