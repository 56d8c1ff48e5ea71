"""`--add-noqa` suppresses today's findings in place, so a second run is clean and every
suppression is used; it keeps encodings, line endings and permissions, and never writes a
comment where it would change the code."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from tests.git_repo import git as run_git
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
    # One statement line, one VP201: the second read on line 5 is VP202's finding alone. One call,
    # one finding: the repeated reads on lines 6 (suppressed) and 7 are VP202's, not also VP201's.
    assert before == [("VP203", 4), ("VP201", 5), ("VP202", 5), ("VP202", 7)]

    assert main(["train.py", "--add-noqa", "--no-cache", "--select", "VP2"]) == 0
    assert capsys.readouterr().err == "Added 3 suppressions to 1 file.\n"
    assert path.read_bytes().decode().split("\r\n") == [
        "import torch",
        "",
        "for batch in loader:",
        "    torch.cuda.synchronize()  # noqa: E501  # verify-perf: ignore[VP203]",
        "    print(batch.item()); print(batch.item())  # verify-perf: ignore[VP201, VP202]",
        "    x = batch.item() # verify-perf: ignore[VP202]",
        "    log(f'''{batch.item()}",
        "    ''')  # verify-perf: ignore[VP202]",
        "    loss = model(batch)",
        "    loss.backward()",
        "    optimizer.step()",
        "",
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    after, suppressed = findings(capsys, "train.py")
    assert (after, suppressed) == ([], 5)


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


SYNC_LOOP = (
    "import torch\n\nfor batch in loader:\n"
    "    with torch.autocast('cuda', dtype=torch.bfloat16): loss = model(batch.cuda()).sum()\n"
    "    loss.backward()\n"
    "    torch.cuda.synchronize()\n"
)
SUPPRESSED_LOOP = SYNC_LOOP.replace("synchronize()\n", "synchronize()  # verify-perf: ignore[VP203]\n")


def test_add_noqa_puts_the_comment_where_a_backslash_continuation_ends(project, capsys):
    path = project / "train.py"
    head = "import torch\n\nfor batch in loader:\n    loss = model(batch.cuda()).sum()\n    loss.backward()\n"
    path.write_text(head + "    x = loss.item() + \\\n        1\n")
    assert main(["train.py", "--add-noqa", "--no-cache", "--select", "VP2"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_text() == head + "    x = loss.item() + \\\n        1  # verify-perf: ignore[VP201]\n"
    assert findings(capsys, "train.py") == ([], 1)


def test_add_noqa_counts_files_and_leaves_notebooks_alone_saying_so(project, capsys):
    (project / "a.py").write_text(SYNC_LOOP)
    (project / "b.py").write_text(SYNC_LOOP + "    print(batch.item())\n")
    notebook = json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": SYNC_LOOP.splitlines(keepends=True)}],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5,
    })
    (project / "nb.ipynb").write_text(notebook)
    assert main([".", "--add-noqa", "--no-cache", "--select", "VP2"]) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "Added 3 suppressions to 2 files.\n"
        "verify-perf: warning: nb.ipynb:cell 1:6:5: VP203 not suppressed: notebooks are not edited\n"
    )
    assert (project / "a.py").read_text() == SUPPRESSED_LOOP
    assert (project / "b.py").read_text() == SUPPRESSED_LOOP + "    print(batch.item())  # verify-perf: ignore[VP201]\n"
    assert (project / "nb.ipynb").read_text() == notebook
    assert not (project / "reports").exists()


def test_add_noqa_leaves_the_audit_findings_to_be_fixed(project, capsys):
    path = project / "train.py"
    path.write_text(SYNC_LOOP + "    pass  # verify-perf: ignore[VP2O1]\n")
    assert main(["train.py", "--add-noqa", "--no-cache", "--select", "VP2"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_text() == SUPPRESSED_LOOP + "    pass  # verify-perf: ignore[VP2O1]\n"
    assert findings(capsys, "train.py") == ([("VP901", 7)], 1)


def test_add_noqa_edits_a_file_reached_through_a_link_once(project, capsys):
    (project / "train.py").write_text(SYNC_LOOP)
    os.symlink("train.py", project / "link.py")
    assert main([".", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert (project / "train.py").read_text() == SUPPRESSED_LOOP
    assert os.readlink(project / "link.py") == "train.py"


def test_add_noqa_merges_into_our_directive_and_a_second_run_adds_nothing(project, capsys):
    path = project / "train.py"
    path.write_text(SYNC_LOOP.replace("synchronize()\n", "synchronize()  # verify-perf: ignore[VP201]\n"))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert path.read_text() == SYNC_LOOP.replace("synchronize()\n", "synchronize()  # verify-perf: ignore[VP201, VP203]\n")
    capsys.readouterr()
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 0 suppressions to 0 files.\n"


def test_add_noqa_names_the_codes_in_a_bare_directive_and_next_to_a_blanket_noqa(project, capsys):
    path = project / "train.py"
    path.write_text(SYNC_LOOP.replace("synchronize()\n", "synchronize()  # noqa  # verify-perf: ignore\n"))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_text() == SYNC_LOOP.replace(
        "synchronize()\n", "synchronize()  # noqa  # verify-perf: ignore[VP203]\n"
    )
    assert findings(capsys, "train.py") == ([], 1)


def test_add_noqa_writes_a_reason_where_the_project_requires_one(project, capsys):
    (project / "pyproject.toml").write_text("[tool.verify-perf]\nrequire-suppression-reason = true\n")
    path = project / "train.py"
    path.write_text(SYNC_LOOP)
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_text() == SYNC_LOOP.replace(
        "synchronize()\n", "synchronize()  # verify-perf: ignore[VP203] -- existing finding, suppressed by --add-noqa\n"
    )
    assert findings(capsys, "train.py") == ([], 1)
    # A directive of ours without a reason gets the codes and the reason; one with a reason keeps it.
    path.write_text(SYNC_LOOP.replace("synchronize()\n", "synchronize()  # verify-perf: ignore[VP201]\n"))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert path.read_text() == SYNC_LOOP.replace(
        "synchronize()\n",
        "synchronize()  # verify-perf: ignore[VP201, VP203] -- existing finding, suppressed by --add-noqa\n",
    )
    path.write_text(SYNC_LOOP.replace("synchronize()\n", "synchronize()  # verify-perf: ignore[VP201] -- timing\n"))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert path.read_text() == SYNC_LOOP.replace(
        "synchronize()\n", "synchronize()  # verify-perf: ignore[VP201, VP203] -- timing\n"
    )


@pytest.mark.parametrize("text", ["# verify-perf: ignore[VP201]", "# verify-perf: ignore"], ids=["listed", "bare"])
def test_add_noqa_never_edits_a_string_that_looks_like_a_directive(project, capsys, text):
    path = project / "train.py"
    line = f"    torch.cuda.synchronize(); note = {text!r}\n"
    path.write_text(SYNC_LOOP.replace("    torch.cuda.synchronize()\n", line))
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    # The string is program data: it stays as it was, and a real comment silences the finding.
    assert path.read_text() == SYNC_LOOP.replace(
        "    torch.cuda.synchronize()\n", line.replace("\n", "  # verify-perf: ignore[VP203]\n")
    )
    assert findings(capsys, "train.py") == ([], 1)


def test_add_noqa_counts_lines_as_python_does_after_a_stray_carriage_return(project, capsys):
    path = project / "train.py"
    path.write_bytes(SYNC_LOOP.replace("import torch\n", "import torch\rstarted = 1\n").encode())
    assert main(["train.py", "--add-noqa", "--no-cache"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_bytes().decode() == SUPPRESSED_LOOP.replace("import torch\n", "import torch\rstarted = 1\n")
    assert findings(capsys, "train.py") == ([], 1)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_add_noqa_with_diff_suppresses_the_changed_lines_only(project, capsys):
    def git(*args):
        run_git(project, *args)

    git("init", "-q", "-b", "main")
    path = project / "train.py"
    path.write_text(SYNC_LOOP)
    git("add", ".")
    git("commit", "-q", "-m", "base")
    path.write_text(SYNC_LOOP + "    print(batch.item())\n")
    assert main(["train.py", "--add-noqa", "--no-cache", "--diff", "main"]) == 0
    assert capsys.readouterr().err == "Added 1 suppression to 1 file.\n"
    assert path.read_text() == SYNC_LOOP + "    print(batch.item())  # verify-perf: ignore[VP201]\n"
