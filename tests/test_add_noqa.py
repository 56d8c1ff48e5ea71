"""`--add-noqa` suppresses today's findings in place, so a second run is clean and every
suppression is used; it keeps encodings, line endings and permissions, and never writes a
comment where it would change the code."""

from __future__ import annotations

import json
import os
import stat

import pytest

from verifier.cli import main

TRAIN = (
    "import torch\n"
    "\n"
    "for batch in loader:\n"
    "    torch.cuda.synchronize()  # noqa: E501\n"
    "    print(batch.item()); print(batch.item())\n"
    "    x = batch.item() # verify-perf: ignore[VP202]\n"
    "    log(f'''{batch.item()}\n"
    "    ''')\n"
    "    loss = model(batch)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    return tmp_path


def findings(capsys, *argv):
    main([*argv, "--format", "json", "--no-report", "--no-cache", "--select", "VP2"])
    data = json.loads(capsys.readouterr().out)
    return [(f["code"], f["line"]) for f in data["findings"]], data["suppressed"]


def test_add_noqa_silences_every_finding_and_each_suppression_is_used(project, capsys):
    path = project / "train.py"
    path.write_bytes(TRAIN.replace("\n", "\r\n").encode())
    os.chmod(path, 0o640)
    before, _ = findings(capsys, "train.py")
    # One statement line, one VP201: the second read on line 5 is VP202's finding alone.
    assert before == [("VP203", 4), ("VP201", 5), ("VP202", 5), ("VP201", 6), ("VP201", 7), ("VP202", 7)]

    assert main(["train.py", "--add-noqa", "--no-cache", "--select", "VP2"]) == 0
    assert capsys.readouterr().err == "Added 4 suppressions to 1 file.\n"
    assert path.read_bytes().decode().split("\r\n") == [
        "import torch",
        "",
        "for batch in loader:",
        "    torch.cuda.synchronize()  # noqa: E501  # verify-perf: ignore[VP203]",
        "    print(batch.item()); print(batch.item())  # verify-perf: ignore[VP201, VP202]",
        "    x = batch.item() # verify-perf: ignore[VP202, VP201]",
        "    log(f'''{batch.item()}",
        "    ''')  # verify-perf: ignore[VP201, VP202]",
        "    loss = model(batch)",
        "    loss.backward()",
        "    optimizer.step()",
        "",
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    after, suppressed = findings(capsys, "train.py")
    assert (after, suppressed) == ([], 7)


def test_add_noqa_keeps_the_file_encoding(project, capsys):
    path = project / "train.py"
    text = (
        "# -*- coding: latin-1 -*-\nimport torch\n\n# café\nfor batch in loader:\n    torch.cuda.synchronize()\n"
        "    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n"
    )
    path.write_bytes(text.encode("latin-1"))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    # The training loop without autocast is VP306's (INFO) finding, the sync VP203's.
    assert path.read_bytes() == text.replace(
        "torch.cuda.synchronize()", "torch.cuda.synchronize()  # verify-perf: ignore[VP203]"
    ).replace("for batch in loader:", "for batch in loader:  # verify-perf: ignore[VP306]").encode("latin-1")


def test_add_noqa_with_nothing_to_add_changes_nothing(project, capsys):
    (project / "clean.py").write_text("x = 1\n")
    before = (project / "clean.py").stat().st_mtime_ns
    assert main(["clean.py", "--add-noqa"]) == 0
    assert capsys.readouterr().err == "Added 0 suppressions to 0 files.\n"
    assert (project / "clean.py").stat().st_mtime_ns == before
    assert not (project / "reports").exists()
