"""Suppression comments applied centrally (verify-perf: ignore[...], noqa: CODE, and the file-level
verify-perf: noqa: CODE), and audited: VP901 for a comment that cannot silence what it is written
for (an unknown code, a bare directive of ours, a blanket noqa a finding passed, a missing reason),
VP902 for a suppression that silenced nothing."""

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
        ("  # verify-perf: ignore", [("VP201", 7, "MEDIUM"), ("VP901", 7, "LOW")]),
        ("  # noqa: VP201", []),
        ("  # noqa: sync-in-hot-loop", []),
        ("  # noqa: VP201 -- read once per log interval", []),
        ("  # noqa", [("VP201", 7, "MEDIUM"), ("VP901", 7, "LOW")]),
        ("  # NOQA", [("VP201", 7, "MEDIUM"), ("VP901", 7, "LOW")]),
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
    assert suppressed_codes("x()  # noqa") == set()
    assert suppressed_codes("x()  # a plain comment") is None
    # A reason after `--` is not a code, and a rule's name keeps its hyphens.
    assert suppressed_codes("x()  # noqa: VP201 -- read once per interval") == {"VP201"}
    assert suppressed_codes("x()  # noqa: sync-in-hot-loop, E501 -- why") == {"SYNC-IN-HOT-LOOP", "E501"}
    assert suppressed_codes("x()  # verify-perf: ignore[VP201] -- why") == {"VP201"}
    assert suppressed_codes("# verify-perf: noqa: VP203, VP201") == {"VP203", "VP201"}


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


BARE = (
    "`# verify-perf: ignore` names no rule: it silences nothing; name the rules it is for, "
    "e.g. `# verify-perf: ignore[VP203]`"
)


def test_a_bare_directive_of_ours_names_no_rule_whatever_ran(tmp_path):
    text = "import torch\n\nx = torch.zeros(3)  # verify-perf: ignore\ny = 1  # noqa\n"
    assert audit(run(tmp_path, text)) == [("VP901", 3, 21, BARE)]
    assert audit(run(tmp_path, text, select=("VP2",))) == [("VP901", 3, 21, BARE)]


def test_a_blanket_noqa_never_silences_a_finding_and_is_reported_where_it_passed_one(tmp_path):
    result = run(tmp_path, SYNC_LOOP.format(comment="  # noqa"))
    assert [(f.code, f.line, f.severity.name) for f in result.findings] == [("VP203", 8, "HIGH"), ("VP901", 8, "LOW")]
    assert audit(result) == [(
        "VP901", 8, 31,
        ("a blanket `# noqa` does not silence verify-perf: VP203 on this line is still reported; "
         "name the rule to silence it (`# noqa: VP203`)"),
    )]
    assert [f for r in result.files for f in r.suppressed] == []


def test_a_blanket_noqa_next_to_a_suppression_of_ours_is_another_linters(tmp_path):
    result = run(tmp_path, SYNC_LOOP.format(comment="  # noqa  # verify-perf: ignore[VP203]"))
    assert result.findings == []
    assert [(f.code, f.line) for r in result.files for f in r.suppressed] == [("VP203", 8)]


def test_a_blanket_noqa_on_a_line_with_no_finding_of_ours_is_another_linters(tmp_path):
    result = run(tmp_path, "import torch\nimport os  # noqa\n\nx = torch.zeros(3)  # noqa\n")
    assert result.findings == []


FILE_LEVEL = (
    "# verify-perf: noqa: VP203 -- the benchmark times every step on purpose\n"
    "import torch\n\nmodel.cuda()\nfor x in loader:\n"
    "    with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n        loss = model(x).sum()\n"
    "    loss.backward()\n    torch.cuda.synchronize()\n    print(loss.item())\n"
)


def test_a_file_level_suppression_silences_its_rules_in_the_whole_file(tmp_path):
    result = run(tmp_path, FILE_LEVEL)
    assert [(f.code, f.line) for f in result.findings] == [("VP201", 10)]
    assert [(f.code, f.line) for r in result.files for f in r.suppressed] == [("VP203", 9)]
    # With a reason it silences when reasons are required, too.
    required = run(tmp_path, FILE_LEVEL, require_suppression_reason=True)
    assert [(f.code, f.line) for f in required.findings] == [("VP201", 10)]


def test_a_file_level_suppression_is_audited(tmp_path):
    unused = run(tmp_path, "# verify-perf: noqa: VP201\nimport torch\n\nx = torch.zeros(3)\n")
    assert audit(unused) == [("VP902", 1, 1, "unused suppression: no VP201 finding in this file to ignore")]
    unknown = run(tmp_path, "# verify-perf: noqa: VP2O1\nimport torch\n")
    assert audit(unknown) == [(
        "VP901", 1, 1, "unknown rule `VP2O1` in a suppression comment: it suppresses nothing (did you mean VP201?)",
    )]
    bare = run(tmp_path, FILE_LEVEL.replace(": VP203 --", " --"))
    assert [(f.code, f.line) for f in bare.findings] == [("VP901", 1), ("VP203", 9), ("VP201", 10)]
    assert audit(bare) == [(
        "VP901", 1, 1,
        ("`# verify-perf: noqa` names no rule: it silences nothing; name the rules it is for, "
         "e.g. `# verify-perf: noqa: VP203`"),
    )]


UNREASONED = (
    "suppression without a reason: VP203 is still reported (`require-suppression-reason` is on); "
    "write why after the codes, e.g. `# noqa: VP203 -- read once per log interval`"
)


@pytest.mark.parametrize("comment", ["  # noqa: VP203", "  # verify-perf: ignore[synchronize-in-loop]", "  # noqa: VP203 --"])
def test_with_reasons_required_a_suppression_without_one_silences_nothing(tmp_path, comment):
    result = run(tmp_path, SYNC_LOOP.format(comment=comment), require_suppression_reason=True)
    assert [(f.code, f.line, f.severity.name) for f in result.findings] == [("VP203", 8, "HIGH"), ("VP901", 8, "LOW")]
    assert audit(result) == [("VP901", 8, 31, UNREASONED)]
    assert [f for r in result.files for f in r.suppressed] == []


@pytest.mark.parametrize("comment", [
    "  # noqa: VP203 -- timing the step is this script's job",
    "  # verify-perf: ignore[VP203] -- timing the step is this script's job",
    "  # noqa: E501, VP203, -- timing",
])
def test_with_reasons_required_a_suppression_with_one_silences(tmp_path, comment):
    result = run(tmp_path, SYNC_LOOP.format(comment=comment), require_suppression_reason=True)
    assert result.findings == []
    assert [(f.code, f.line) for r in result.files for f in r.suppressed] == [("VP203", 8)]


def test_without_the_switch_a_reason_is_optional(tmp_path):
    assert run(tmp_path, SYNC_LOOP.format(comment="  # noqa: VP203")).findings == []
    assert run(tmp_path, SYNC_LOOP.format(comment="  # noqa: VP203 -- why")).findings == []


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
