"""Finding identity: rule, enclosing function, normalised statement and code; never the path or
a line number. What keeps a fingerprint, and what gives a new one."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.report.baseline import fingerprints
from verifier.report.identity import Identity, identities
from verifier.static.runner import analyze_paths

METRICS = """\
import torch


class Tracker:
    def wait_for_device(self):
        torch.cuda.synchronize()

    def log(self, loss):
        if loss.isnan().any():
            print(loss.item())


def helper():
    pass
"""


def findings_of(folder, name: str, text: str):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return analyze_paths([str(path)], Settings()).findings


def test_identity_is_the_scope_the_statement_and_the_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metrics.py").write_text(METRICS)
    from tests.report.conftest import make_finding

    synchronize = make_finding("VP203", line=6, path="metrics.py", source="        torch.cuda.synchronize()")
    synchronize = synchronize.__class__(**{**synchronize.__dict__, "column": 9, "end_line": 6, "end_column": 33})
    header = make_finding("VP201", line=9, path="metrics.py", source="        if loss.isnan().any():")
    header = header.__class__(**{**header.__dict__, "column": 12, "end_line": 9, "end_column": 30})
    read = make_finding("VP201", line=10, path="metrics.py", source="            print(loss.item())")
    read = read.__class__(**{**read.__dict__, "column": 19, "end_line": 10, "end_column": 30})
    known = identities([synchronize, header, read])
    assert known[synchronize] == Identity("Tracker.wait_for_device", "torch.cuda.synchronize()", "torch.cuda.synchronize()")
    # A compound statement is its header only: its body can change without changing it.
    assert known[header] == Identity("Tracker.log", "if loss.isnan().any():\n    pass", "loss.isnan().any()")
    assert known[read] == Identity("Tracker.log", "print(loss.item())", "loss.item()")


def test_a_renamed_file_and_a_moved_function_keep_their_fingerprints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train = (
        "import torch\n\ndef helper():\n    return 1\n\n"
        "def train(model, loader, optimizer):\n    for x in loader:\n        loss = model(x)\n"
        "        loss.backward()\n        optimizer.step()\n        torch.cuda.synchronize()\n"
    )
    before = findings_of(tmp_path, "train.py", train)
    printed_before = sorted(fingerprints(before).values())
    # Renamed, the helper moved below, blank lines, comments and a suppression of another linter added.
    moved = train.replace("def helper():\n    return 1\n\n", "") + "\n\n# the helper\ndef helper():\n    return 1\n"
    moved = moved.replace("torch.cuda.synchronize()\n", "torch.cuda.synchronize(  )  # noqa: E501\n")
    (tmp_path / "train.py").unlink()
    after = findings_of(tmp_path, "loop_v2.py", moved)
    assert [(f.code, f.line) for f in before] == [("VP306", 7), ("VP203", 11)]
    assert [(f.code, f.line) for f in after] == [("VP306", 4), ("VP203", 8)]
    assert printed_before == sorted(fingerprints(after).values())


def test_a_statement_moved_into_another_function_is_another_finding(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    loop = "import torch\n\ndef {name}(model, loader, optimizer):\n    for x in loader:\n        loss = model(x)\n" \
           "        loss.backward()\n        optimizer.step()\n        torch.cuda.synchronize()\n"
    before = findings_of(tmp_path, "train.py", loop.format(name="train"))
    printed_before = set(fingerprints(before).values())
    after = findings_of(tmp_path, "train.py", loop.format(name="fit"))
    assert [f.code for f in before] == [f.code for f in after] == ["VP306", "VP203"]
    assert printed_before.isdisjoint(fingerprints(after).values())


def test_identical_findings_in_one_file_are_told_apart_by_their_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = findings_of(tmp_path, "train.py", (
        "import torch\n\ndef train(model, loader, optimizer):\n    for x in loader:\n        loss = model(x)\n"
        "        loss.backward()\n        optimizer.step()\n        torch.cuda.synchronize()\n"
        "        torch.cuda.synchronize()\n"
    ))
    syncs = [f for f in found if f.code == "VP203"]
    assert [f.line for f in syncs] == [8, 9]
    prints = fingerprints(found)
    assert prints[syncs[0]] != prints[syncs[1]]


def test_a_file_that_no_longer_parses_falls_back_to_the_first_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("def f(:\n")
    from tests.report.conftest import make_finding

    finding = make_finding("VP201", line=1, path="broken.py", source="x = loss.item()  # verify-perf: ignore[VP201]")
    assert identities([finding])[finding] == Identity("", "x = loss.item()", "")
