"""Jupyter notebooks are analysed cell by cell, as one module (heat crosses cells), with findings
at `notebook.ipynb:cell N:line` and IPython-only syntax skipped; nothing in a notebook runs."""

from __future__ import annotations

import json

import jsonschema
import pytest

from verifier.cli import main
from verifier.static.notebook import python_lines

CELLS = [
    ("markdown", "# Training\nThe loop below `print`s every step."),
    ("code", "%pip install torch\nimport torch"),
    ("code", "def log(loss):\n    print(loss.item())"),
    ("code", "!nvidia-smi"),
    ("code", "%%time\nfor x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    optimizer.step()\n"
             "    log(loss)\n    torch.cuda.synchronize()"),
    ("code", "%%bash\nfor f in *.py; do python $f; done"),
    ("code", "model?\nfiles = !ls\nif files:\n    %time log(x)"),
]


def notebook(cells=CELLS, language="python") -> str:
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "k", "language": language, "display_name": "K"}},
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
             **({"outputs": [], "execution_count": None} if kind == "code" else {})}
            for kind, text in cells
        ],
    })


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "train.ipynb").write_text(notebook())
    return tmp_path


def run_json(capsys, *argv):
    code = main([*argv, "--format", "json", "--no-report", "--no-cache"])
    return code, json.loads(capsys.readouterr().out)


def test_findings_name_the_cell_and_the_line_within_it(project, capsys):
    assert main(["train.ipynb", "--no-report", "--no-cache", "-q", "--select", "VP2"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "train.ipynb:cell 3:2:11: VP201 [MEDIUM] `.item()` of `loss` in the per-step loop waits for the device every step",
        "train.ipynb:cell 5:7:5: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration",
    ]


def test_json_and_sarif_carry_the_same_cell_mapping(project, capsys):
    from tests.report.test_machine_formats import FINDINGS_SCHEMA, SARIF_SCHEMA

    _, data = run_json(capsys, ".", "--select", "VP2")
    jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(data)
    assert data["files"] == ["train.ipynb"]
    assert [(f["cell"], f["line"], f["end_line"], f["column"], f["code"]) for f in data["findings"]] == [
        (3, 2, 2, 11, "VP201"), (5, 7, 7, 5, "VP203"),
    ]
    main([".", "--select", "VP2", "--format", "sarif", "--no-report", "--no-cache"])
    sarif = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(sarif)
    places = [(r["properties"]["cell"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
              for r in sarif["runs"][0]["results"]]
    assert places == [(3, 2), (5, 7)]


def test_the_markdown_report_and_github_annotations_name_the_cell(project, capsys):
    main(["train.ipynb", "--select", "VP2", "--format", "markdown", "-o", "r.md", "--no-cache"])
    assert "#### HIGH VP203 synchronize-in-loop at `train.ipynb:cell 5:7`" in (project / "r.md").read_text()
    main(["train.ipynb", "--select", "VP2", "--format", "github", "--no-report", "--no-cache"])
    assert "file=train.ipynb,line=7,endLine=7,col=5,title=VP203 synchronize-in-loop [HIGH] (cell 5)" \
        in capsys.readouterr().out


def test_a_suppression_in_a_cell_works(project, capsys):
    cells = [*CELLS[:4], ("code", CELLS[4][1] + "  # verify-perf: ignore[VP203]")]
    (project / "train.ipynb").write_text(notebook(cells))
    _, data = run_json(capsys, "train.ipynb", "--select", "VP2")
    assert [(f["cell"], f["code"]) for f in data["findings"]] == [(3, "VP201")]
    assert data["suppressed_findings"] == [
        {"path": "train.ipynb", "cell": 5, "line": 7, "column": 5, "code": "VP203", "severity": "HIGH"}
    ]


def test_a_notebook_in_another_language_is_not_analysed_as_python(project, capsys):
    (project / "r.ipynb").write_text(notebook([("code", "for (i in 1:10) print(i$item())")], language="R"))
    code, data = run_json(capsys, "r.ipynb")
    assert (code, data["findings"]) == (0, [])


def test_an_unreadable_notebook_is_a_vp900(project, capsys):
    (project / "broken.ipynb").write_text('{"cells": [')
    _, data = run_json(capsys, "broken.ipynb")
    assert [(f["code"], f["line"]) for f in data["findings"]] == [("VP900", 1)]
    assert data["findings"][0]["message"].startswith("not a readable notebook (invalid JSON")


@pytest.mark.parametrize("cell", ['"x"', "1", "null", "[]"])
def test_a_notebook_with_a_cell_that_is_not_an_object_is_a_vp900(project, capsys, cell):
    # Skipped in silence, the notebook was analysed without it and passed.
    document = json.loads(notebook())
    document["cells"].insert(1, json.loads(cell))
    (project / "odd.ipynb").write_text(json.dumps(document))
    _, data = run_json(capsys, "odd.ipynb")
    assert [(f["code"], f["severity"], f["message"]) for f in data["findings"]] == [
        ("VP900", "INFO", "not a readable notebook (cell 2 is not an object)"),
    ]


def test_add_noqa_leaves_notebooks_alone(project, capsys):
    before = (project / "train.ipynb").read_bytes()
    assert main(["train.ipynb", "--add-noqa", "--no-cache", "--select", "VP203"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "Added 0 suppressions to 0 files.",
        "verify-perf: warning: train.ipynb:cell 5:7:5: VP203 not suppressed: notebooks are not edited",
    ]
    assert (project / "train.ipynb").read_bytes() == before


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%%time\nfor b in loader:\n    f(b)", ["", "for b in loader:", "    f(b)"]),
        ("%%timeit -n 3\nf()", ["", "f()"]),
        ("%%bash\nls\npwd", ["", "", ""]),
        ("%matplotlib inline\nx = 1", ["", "x = 1"]),
        ("out = !ls\nif out:\n    !echo yes\n    %time f()", ["", "if out:", "    pass", "    pass"]),
        ("torch.cuda?\n??model\nx = y", ["", "", "x = y"]),
        ("x = a % b\ny = '!'", ["x = a % b", "y = '!'"]),
    ],
)
def test_ipython_syntax_is_blanked_without_moving_lines(cell, expected):
    assert python_lines(cell) == expected


def test_a_lone_carriage_return_in_a_cell_breaks_the_line_as_python_does(project, capsys):
    # Without it the cell would count one line fewer than the parser and name the wrong line.
    loop = "for x, y in loader:\n    loss = model(x, y)\n    loss.backward()\n    optimizer.step()\n    torch.cuda.synchronize()"
    (project / "train.ipynb").write_text(notebook([("code", "import torch\rstarted = 1"), ("code", loop)]))
    assert main(["train.ipynb", "--no-report", "--no-cache", "-q", "--select", "VP203"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "train.ipynb:cell 2:5:5: VP203 [HIGH] `synchronize()` in a loop blocks the host on every iteration",
    ]
