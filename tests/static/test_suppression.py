"""Suppression comments applied centrally (verify-perf: ignore[...] and noqa), and audited:
VP901 for a code that names no rule, VP902 for a suppression that silenced nothing."""

from __future__ import annotations

import pytest

from verifier.static.suppression import suppressed_codes

LOOP = """
device = "cuda"
model.to(device)
for x in loader:
    loss = model(x).sum()
    loss.backward()
    print(loss.item()){comment}
"""


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("", [("VP201", 7, "MEDIUM")]),
        ("  # verify-perf: ignore[VP201]", []),
        ("  # verify-perf: ignore[sync-in-hot-loop]", []),
        ("  # verify-perf: ignore", []),
        ("  # noqa: VP201", []),
        ("  # noqa", []),
        ("  # noqa: E501", [("VP201", 7, "MEDIUM")]),
        ("  # verify-perf: ignore[VP202]", [("VP201", 7, "MEDIUM"), ("VP902", 7, "LOW")]),
        ("  # verify-perf: ignore[VP2O1]", [("VP201", 7, "MEDIUM"), ("VP901", 7, "LOW")]),
        ("  # noqa: VP201, E501", []),
    ],
)
def test_suppression_comments(analyse, comment, expected):
    assert analyse(LOOP.format(comment=comment)) == expected


def test_directive_parsing():
    assert suppressed_codes("x()  # noqa: VP201, VP202") == {"VP201", "VP202"}
    assert suppressed_codes("x()  # verify-perf: ignore[VP201,VP305]") == {"VP201", "VP305"}
    assert suppressed_codes("x()  # verify-perf: ignore") == set()
    assert suppressed_codes("x()  # a plain comment") is None


def audit(analyse_result) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.line, f.column, f.message) for f in analyse_result.findings if f.code.startswith("VP90")]


def run(tmp_path, text: str, **settings):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    path = tmp_path / "train.py"
    path.write_text(text)
    return analyze_paths([str(path)], Settings(**settings))


SYNC_LOOP = (
    "import torch\n\nmodel.cuda()\nfor x in loader:\n"
    "    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n        loss = model(x).sum()\n"
    "    loss.backward()\n    torch.cuda.synchronize(){comment}\n"
)


def test_an_unknown_code_is_reported_with_a_hint_and_the_finding_stays(tmp_path):
    result = run(tmp_path, SYNC_LOOP.format(comment="  # verify-perf: ignore[VP2O3]"))
    assert [(f.code, f.line) for f in result.findings] == [("VP203", 8), ("VP901", 8)]
    assert audit(result) == [(
        "VP901", 8, 31,
        "unknown rule `VP2O3` in a suppression comment: it suppresses nothing (did you mean VP203?)",
    )]


def test_an_unused_suppression_names_its_code(tmp_path):
    result = run(tmp_path, "import torch\n\nx = torch.zeros(3)  # noqa: VP203, F401\n")
    assert audit(result) == [("VP902", 3, 21, "unused suppression: no VP203 finding on this line to ignore")]


def test_a_used_suppression_is_counted_not_reported(tmp_path):
    result = run(tmp_path, SYNC_LOOP.format(comment="  # verify-perf: ignore[synchronize-in-loop]"))
    assert result.findings == []
    assert [(f.code, f.line) for r in result.files for f in r.suppressed] == [("VP203", 8)]


def test_a_rule_that_did_not_run_cannot_be_judged(tmp_path):
    text = SYNC_LOOP.format(comment="  # noqa: VP201")
    assert audit(run(tmp_path, text)) == [
        ("VP902", 8, 31, "unused suppression: no VP201 finding on this line to ignore")
    ]
    assert audit(run(tmp_path, text, select=("VP203",))) == []
    assert audit(run(tmp_path, text, ignore=("VP201",))) == []


def test_a_bare_directive_is_judged_only_when_every_rule_ran(tmp_path):
    text = "import torch\n\nx = torch.zeros(3)  # verify-perf: ignore\ny = 1  # noqa\n"
    assert audit(run(tmp_path, text)) == [
        ("VP902", 3, 21, "unused suppression: no finding on this line to ignore")
    ]
    assert audit(run(tmp_path, text, select=("VP2",))) == []


def test_comment_text_inside_a_string_is_not_a_directive(tmp_path):
    assert audit(run(tmp_path, 'import torch\n\nHELP = "write # noqa: VP2O1 to silence"\n')) == []


def test_a_file_no_rule_needs_to_parse_still_has_its_suppressions_audited(tmp_path):
    result = run(tmp_path, "x = 1  # verify-perf: ignore[VP201]\n")
    assert [(f.code, f.line) for f in result.findings] == [("VP902", 1)]


def test_the_audit_can_be_ignored_like_any_rule(tmp_path):
    text = SYNC_LOOP.format(comment="  # verify-perf: ignore[VP2O3]")
    assert [f.code for f in run(tmp_path, text, ignore=("VP901",)).findings] == ["VP203"]
    assert [f.code for f in run(tmp_path, text, select=("VP203",)).findings] == ["VP203", "VP901"]


# Line 2 holds two statements for Python: a lone carriage return breaks a line as `\n` does.
STRAY_CR = (
    "import torch\nstarted = 1\rsteps = 0\n\nmodel.cuda()\nfor x in loader:\n"
    "    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n        loss = model(x).sum()\n"
    "    loss.backward()\n    torch.cuda.synchronize()\n    steps += 1{comment}\n"
)


def write_bytes_run(tmp_path, text: str, **settings):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    path = tmp_path / "train.py"
    path.write_bytes(text.encode())  # newlines exactly as written
    return analyze_paths([str(path)], Settings(**settings))


def test_after_a_stray_carriage_return_a_comment_silences_its_own_line_only(tmp_path):
    result = write_bytes_run(tmp_path, STRAY_CR.format(comment="  # verify-perf: ignore[VP203]"))
    # The synchronize is on line 10; the directive is on line 11, where there is nothing to silence.
    assert [(f.code, f.line) for f in result.findings] == [("VP203", 10), ("VP902", 11)]
    assert [f.code for r in result.files for f in r.suppressed] == []


def test_suppressions_work_in_a_file_with_carriage_returns_only(tmp_path):
    text = SYNC_LOOP.format(comment="  # verify-perf: ignore[VP203]").replace("\n", "\r")
    result = write_bytes_run(tmp_path, text)
    assert result.findings == []
    assert [(f.code, f.line) for r in result.files for f in r.suppressed] == [("VP203", 8)]
