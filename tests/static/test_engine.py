"""The engine on odd input: unanalysable files become VP900 and the run goes on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

SYNC_LOOP = (
    "for x in loader:\n    loss = model(x.cuda(non_blocking=True)).sum()\n"
    "    loss.backward()\n    print(loss.item())\n"
)


def test_syntax_error_invalid_utf8_and_empty_file(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\n\ndef train(:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"x = 1\nname = '\xff\xfe caf\xe9'\n")
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "train.py").write_text(SYNC_LOOP)
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201", "VP900")))
    rows = [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings]
    assert rows == [
        ("broken.py", "VP900", 3, "INFO"),
        ("latin.py", "VP900", 2, "INFO"),
        ("train.py", "VP201", 4, "MEDIUM"),
    ]
    assert len(result.files) == 4
    assert result.internal_errors == []
    messages = {f.path.rsplit("/", 1)[-1]: f.message for f in result.findings if f.code == "VP900"}
    assert messages["broken.py"].startswith("syntax error")
    assert messages["latin.py"].startswith("cannot decode file as utf-8")


def test_declared_encoding_bom_and_crlf_are_read_like_python(tmp_path):
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\r\nname = '\xe9'\r\n" + SYNC_LOOP.replace("\n", "\r\n").encode())
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + SYNC_LOOP.encode())
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201",)))
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line) for f in result.findings] == [
        ("bom.py", "VP201", 4),
        ("latin.py", "VP201", 6),
    ]


def test_select_and_ignore(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n" + SYNC_LOOP + "    torch.cuda.synchronize()\n")

    def codes(**settings):
        return [f.code for f in analyze_paths([str(tmp_path)], Settings(**settings)).findings]

    assert codes(select=("VP2",)) == ["VP201", "VP203"]
    assert codes(select=("VP2",), ignore=("synchronize-in-loop",)) == ["VP201"]
    assert codes(select=("VP203",)) == ["VP203"]


def test_analysing_never_imports_or_executes_the_code(tmp_path):
    marker = tmp_path / "marker"
    target = tmp_path / "project"
    target.mkdir()
    (target / "train.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\nimport torch\n" + SYNC_LOOP)
    (target / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    probe = (
        "import sys\n"
        "from verifier.cli import main\n"
        f"code = main([{str(target)!r}])\n"
        "print(code, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.stdout.strip().splitlines()[-1] == "0 False"
    assert "VP201" in done.stdout
    assert not marker.exists()


def test_rules_share_one_tracker_and_the_tree_dies_with_its_file():
    """Three autograd rules read one TrainingState; nothing keeps the parsed tree alive in a cycle."""
    import gc

    import libcst as cst

    from verifier.rules import rule_by_selector
    from verifier.static import engine
    from verifier.static.source import decode_source
    from verifier.static.training_state import TrainingStateRule

    code = (
        "import torch\nhistory = []\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n"
        "    history.append(loss)\n"
    )
    rules = [r for code_ in ("VP401", "VP402", "VP404") for r in rule_by_selector(code_)]
    seen = []
    original = engine._dispatch_tables

    def spy(first, walkers):
        seen.extend(walkers)
        return original(first, walkers)

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        engine._dispatch_tables = spy
        analysis = engine.analyze_source("train.py", decode_source(code.encode()), rules, Settings())
        engine._dispatch_tables = original
        state_trackers = {id(w.autograd) for w in seen if isinstance(w, TrainingStateRule)}
        del seen[:]
        gc.collect()
        leaked = [o for o in gc.garbage if isinstance(o, cst.CSTNode)]
    finally:
        engine._dispatch_tables = original
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert [(f.code, f.line) for f in analysis.findings] == [("VP402", 6)]
    assert len(state_trackers) == 1
    assert leaked == []


def test_bracket_depth_check_counts_only_ascii_brackets_at_the_limit():
    """The gate that sends deep code to Python's parser first: MAX_NESTING open brackets pass,
    one more does not; brackets after closing ones, other characters (also non-ASCII ones and a
    lone surrogate) and closing brackets never add depth."""
    from verifier.static.engine import MAX_NESTING, may_nest_too_deeply

    at_limit = "x = " + "(" * MAX_NESTING + "1" + ")" * MAX_NESTING
    assert not may_nest_too_deeply(at_limit)
    assert may_nest_too_deeply("x = " + "[" * (MAX_NESTING + 1))
    assert not may_nest_too_deeply("({é\ud800})" * (MAX_NESTING + 1))
    assert may_nest_too_deeply("é\ud800".join("{" * (MAX_NESTING + 1)))
    assert not may_nest_too_deeply(")" * 1000 + "(" * MAX_NESTING)


@pytest.mark.parametrize(
    ("declared", "body", "line", "reason"),
    [
        ("undefined", b"x = 1\n", 1, "cannot decode file as undefined: decoding with 'undefined' codec failed "
                                     "(UnicodeError: undefined encoding)"),
        ("punycode", b"x = 1\n", 1, "cannot decode file as punycode: decoding with 'punycode' codec failed "
                                    "(UnicodeError: Invalid extended code point '\\n')"),
        ("unicode_escape", b"x = 1\ns = '\\ud800'\n", 3,
         "cannot decode file as unicode_escape: it decodes to a lone surrogate (U+D800), which Python source cannot hold"),
        ("raw_unicode_escape", b"x = 1  # \\udc80\n", 2,
         "cannot decode file as raw_unicode_escape: it decodes to a lone surrogate (U+DC80), which Python source cannot hold"),
    ],
    ids=["undefined", "punycode", "unicode_escape", "raw_unicode_escape"],
)
def test_an_encoding_python_refuses_is_a_vp900_with_its_reason(tmp_path, declared, body, line, reason):
    # Python refuses each of these files with a SyntaxError: not source, so INFO as other decode errors.
    (tmp_path / "odd.py").write_bytes(f"# -*- coding: {declared} -*-\n".encode() + body)
    (tmp_path / "train.py").write_text(SYNC_LOOP)
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201", "VP900")))
    rows = [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name, f.message) for f in result.findings]
    assert rows == [("odd.py", "VP900", line, "INFO", reason), ("train.py", "VP201", 4, "MEDIUM", rows[1][4])]
    assert result.internal_errors == []


def test_a_comment_in_a_file_of_lone_carriage_returns_ends_at_its_own_line(tmp_path):
    # The loop synchronizes on a device: the module names one (`torch.cuda.synchronize()` after
    # the comment), so VP306 reports its loop whatever the file's line breaks are.
    text = (
        "import torch\n\n\ndef train(model, loader, optimizer):\n    for x, y in loader:\n"
        "        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n"
        "        # one step done\n        torch.cuda.synchronize()\n"
    )
    rows = {}
    for name, ends in (("lf", "\n"), ("cr", "\r"), ("crlf", "\r\n")):
        (tmp_path / f"{name}.py").write_bytes(text.replace("\n", ends).encode())
        result = analyze_paths([str(tmp_path / f"{name}.py")], Settings(select=("VP2", "VP306")))
        rows[name] = [(f.code, f.line, f.end_line) for f in result.findings]
    assert rows["lf"] == [("VP306", 5, 10), ("VP203", 10, 10)]
    assert rows["cr"] == rows["crlf"] == rows["lf"]


@pytest.mark.parametrize(
    ("data", "line", "reason"),
    [
        (b"import torch\nx = 1  # \x00 in a comment\n", 2, "syntax error: source code cannot contain null bytes"),
        ("import torch\nx = 1\n".encode("utf-16-le"), 1, "syntax error: source code cannot contain null bytes"),
        (b"# coding: cp037\nimport torch\ntorch.cuda.synchronize()\n", 1, "syntax error"),
    ],
    ids=["null-byte", "utf-16-without-bom", "ebcdic-cookie"],
)
def test_a_file_python_refuses_is_never_skipped_unread(tmp_path, data, line, reason):
    # Each reads `torch` to a person but not to Python: none may pass as a file with nothing in it.
    (tmp_path / "odd.py").write_bytes(data)
    (tmp_path / "train.py").write_text(SYNC_LOOP)
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201", "VP900")))
    rows = [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings]
    assert rows == [("odd.py", "VP900", line, "INFO"), ("train.py", "VP201", 4, "MEDIUM")]
    assert result.findings[0].message.startswith(reason)
    assert result.internal_errors == []


def test_a_script_only_named_like_a_test_is_analysed_as_a_script(tmp_path):
    """`pmnist_test.py` with a `__main__` entry and no test for pytest or unittest to run is a
    training script: its per-step read is reported at step heat. A real test file stays test code."""
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    loop = (
        "import torch\n"
        "def train(model, loader, optimizer):\n"
        "    for x in loader:\n"
        "        loss = model(x.cuda()).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        print(loss.item())\n"
    )
    (tmp_path / "pmnist_test.py").write_text(loop + "if __name__ == '__main__':\n    train(Net().cuda(), data, opt)\n")
    (tmp_path / "model_test.py").write_text(loop + "def test_train():\n    train(Net().cuda(), [], opt)\n")
    found = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name, f.heat.label) for f in found] == [
        ("pmnist_test.py", 7, "MEDIUM", "step"),
    ]
