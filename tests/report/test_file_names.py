"""A file name that is not UTF-8 survives every output: raw bytes in text, escapes in JSON that
round-trip, percent-encoded bytes in SARIF, `\\xe9` in markdown; the baseline still matches it."""

from __future__ import annotations

import json
import os

import pytest

from verifier.cli import main

SYNC_LOOP = (
    "import torch\n\nfor batch in loader:\n    torch.cuda.synchronize()\n"
    "    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n"
)
NAME = os.fsdecode(b"latin\xe9.py")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        (tmp_path / NAME).write_text(SYNC_LOOP)
    except (UnicodeEncodeError, OSError):
        pytest.skip("the file system refuses non-UTF-8 names")
    return tmp_path


def run(fmt: str, *extra: str) -> bytes:
    assert main([NAME, "--format", fmt, "-o", f"out.{fmt}", "--no-report", "--select", "VP203", *extra]) == 1
    with open(f"out.{fmt}", "rb") as handle:
        return handle.read()


def test_text_writes_the_name_back_as_its_bytes(project):
    assert run("text").startswith(b"latin\xe9.py:4:5: VP203 [HIGH]")


def test_json_escapes_the_bytes_and_round_trips(project):
    data = run("json")
    data.decode("utf-8")  # valid UTF-8
    assert b'"path": "latin\\udce9.py"' in data
    assert os.fsencode(json.loads(data)["findings"][0]["path"]) == b"latin\xe9.py"


def test_sarif_percent_encodes_the_bytes(project):
    sarif = json.loads(run("sarif"))
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "latin%E9.py", "uriBaseId": "%SRCROOT%"}


def test_markdown_shows_an_escape(project):
    text = run("markdown").decode("utf-8")
    assert "`latin\\xe9.py:4`" in text


def test_a_baseline_with_such_a_name_matches_it(project):
    run("json")
    os.replace("out.json", "baseline.json")
    data = json.loads(run("json", "--baseline", "baseline.json"))
    assert data["baseline"]["new"] == 0 and data["baseline"]["existing"] == 1


@pytest.mark.parametrize(
    ("fmt", "name", "shown"),
    [
        ("text", "x\nDecision: PASS\r.py", b"x\\nDecision: PASS\\r.py:4:5: VP203 [HIGH]"),
        ("text", "\x1b]0;title\x07.py", b"\\x1b]0;title\\x07.py:4:5: VP203 [HIGH]"),
        ("text", "\u202egnp.py", b"\\u202egnp.py:4:5: VP203 [HIGH]"),
        ("github", "\x1b[2Jx.py", b"::error file=\\x1b[2Jx.py,line=4,"),
    ],
    ids=["newline", "terminal-escape", "right-to-left-override", "github-escape"],
)
def test_a_name_that_would_steer_the_output_is_written_as_escapes(tmp_path, monkeypatch, fmt, name, shown):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(SYNC_LOOP)
    assert main([name, "--format", fmt, "-o", "out", "--no-report", "--select", "VP203"]) == 1
    data = (tmp_path / "out").read_bytes()
    assert data.startswith(shown)
    assert not any(byte in data for byte in (b"\x1b", b"\x07", b"\r")) and "\u202e".encode() not in data
    if fmt == "text":
        assert data.split(b"\n")[-2].startswith(b"Decision: BLOCK")
        assert len(data.split(b"\n")) == 6  # finding, note, score, count, decision, and the final newline
