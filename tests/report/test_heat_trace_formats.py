"""The heat trace in every output: a `= note:` line in text and on the terminal, `heat_trace`
in JSON, `relatedLocations` in SARIF (linked from the result's message), a `note:` line in GitHub
annotations, a "Why hot" line in the markdown report; never part of a finding's identity
(baselines match with or without it)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import jsonschema

from tests.report.conftest import make_finding, make_report
from tests.report.test_machine_formats import FINDINGS_SCHEMA, sarif_of, with_baseline
from verifier.findings import Heat, TraceStep
from verifier.report.github import annotation
from verifier.report.json_format import render_json
from verifier.report.markdown import render_markdown
from verifier.report.terminal import render_terminal
from verifier.report.text import heat_note, render_text

TRACE = (
    TraceStep("utils.py", 43, "calls log_metrics()"),
    TraceStep("train.py", 30, "step loop: iterates train_loader, calls optimizer.step()"),
)
TRACED = replace(make_finding("VP201", line=12, path="utils.py"), heat_trace=TRACE)
NOTE = (
    "runs every step: utils.py:43 calls log_metrics() inside the step loop at train.py:30 "
    "(iterates train_loader, calls optimizer.step())"
)


def test_note_reads_from_the_call_site_to_the_loop():
    assert heat_note(TRACED) == NOTE
    in_loop = replace(make_finding(heat=Heat.EVAL), heat_trace=(
        TraceStep("eval.py", 5, "eval loop: iterates val_loader, runs model() without training"),
    ))
    assert heat_note(in_loop) == (
        "runs every evaluation batch: inside the eval loop at eval.py:5 (iterates val_loader, runs model() without training)"
    )
    guarded = replace(make_finding(heat=Heat.EPOCH), heat_trace=(
        TraceStep("a.py", 9, "calls report() under a rate-limit guard"), TraceStep("a.py", 2, "calls flush()"),
        TraceStep("a.py", 1, "step loop: calls train_step(), which trains"),
    ))
    assert heat_note(guarded) == (
        "runs every few steps: a.py:9 calls report() under a rate-limit guard; a.py:2 calls flush() "
        "inside the step loop at a.py:1 (calls train_step(), which trains)"
    )
    assert heat_note(make_finding(heat=Heat.ONCE)) == ""


def test_text_and_terminal_show_the_note_under_the_finding():
    report = make_report([TRACED])
    lines = render_text(report).splitlines()
    assert lines[0].startswith("utils.py:12:5: VP201 [MEDIUM] ")
    assert lines[1] == f"    = note: {NOTE}"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", render_terminal(report, width=400)).splitlines()
    assert plain[1] == f"    = note: {NOTE}"
    assert render_text(report, quiet=True).splitlines() == [lines[0]]


def test_json_lists_the_steps_and_validates():
    document = json.loads(render_json(make_report([TRACED, make_finding(line=3, heat=Heat.ONCE)])))
    jsonschema.Draft202012Validator(FINDINGS_SCHEMA).validate(document)
    assert [f["heat_trace"] for f in document["findings"]] == [
        [],
        [
            {"path": "utils.py", "line": 43, "what": "calls log_metrics()", "branch": "", "branch_kind": "",
             "inferred": False, "waits": ""},
            {"path": "train.py", "line": 30, "what": "step loop: iterates train_loader, calls optimizer.step()",
             "branch": "", "branch_kind": "", "inferred": False, "waits": ""},
        ],
    ]


def test_sarif_related_locations_carry_each_step():
    result = sarif_of(make_report([TRACED]))["runs"][0]["results"][0]
    assert result["relatedLocations"] == [
        {
            "id": 1,
            "physicalLocation": {
                "artifactLocation": {"uri": "utils.py", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 43},
            },
            "message": {"text": "calls log_metrics()"},
        },
        {
            "id": 2,
            "physicalLocation": {
                "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 30},
            },
            "message": {"text": "step loop: iterates train_loader, calls optimizer.step()"},
        },
    ]
    untraced = sarif_of(make_report([make_finding()]))["runs"][0]["results"][0]
    assert "relatedLocations" not in untraced


# An embedded link as a SARIF viewer reads one: `[text](id)` whose `[` is not escaped.
EMBEDDED_LINK = re.compile(r"(?<!\\)((?:\\\\)*)\[((?:[^\\\[\]]|\\.)*)\]\(([0-9]+)\)")


def unescaped(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_sarif_message_links_each_step_of_the_trace_to_its_related_location():
    result = sarif_of(make_report([TRACED]))["runs"][0]["results"][0]
    assert result["message"]["text"] == (
        "`.item()` of `loss` in the per-step loop waits for the device every step\n"
        "runs every step: [utils.py:43](1) calls log_metrics() inside the step loop at [train.py:30](2) "
        "(iterates train_loader, calls optimizer.step())"
    )
    links = [(text, int(number)) for _, text, number in EMBEDDED_LINK.findall(result["message"]["text"])]
    ids = {location["id"]: location for location in result["relatedLocations"]}
    assert [number for _, number in links] == sorted(ids) == [1, 2]
    for text, number in links:
        region = ids[number]["physicalLocation"]
        assert text == f"{region['artifactLocation']['uri']}:{region['region']['startLine']}"


def test_sarif_message_without_a_trace_is_the_finding_message():
    result = sarif_of(make_report([make_finding(heat=Heat.ONCE)]))["runs"][0]["results"][0]
    assert result["message"]["text"] == "`.item()` of `loss` in the per-step loop waits for the device every step"


def test_sarif_messages_escape_brackets_so_only_the_trace_links():
    """A literal `[`, `]` or `\\` is escaped as CodeQL writes it: `fns[0](x)` in code never reads as a link."""
    odd = replace(
        make_finding("VP205", message="`fns[0](x)` and `t[mask]` read a C:\\tmp value", path="data[1].py",
                     heat=Heat.STEP, name="data-dependent-shape-sync"),
        heat_trace=(TraceStep("data[1].py", 7, "calls run[0]()"),
                    TraceStep("loop[2].py", 3, "step loop: iterates batches[0], calls opt.step()")),
    )
    result = sarif_of(make_report([odd]))["runs"][0]["results"][0]
    text = result["message"]["text"]
    assert text.startswith("`fns\\[0\\](x)` and `t\\[mask\\]` read a C:\\\\tmp value\n")
    assert [(link, number) for _, link, number in EMBEDDED_LINK.findall(text)] == [
        ("data\\[1\\].py:7", "1"), ("loop\\[2\\].py:3", "2"),
    ]
    assert unescaped(EMBEDDED_LINK.sub(lambda m: m[1] + m[2], text)) == (
        "`fns[0](x)` and `t[mask]` read a C:\\tmp value\n"
        "runs every step: data[1].py:7 calls run[0]() inside the step loop at loop[2].py:3 "
        "(iterates batches[0], calls opt.step())"
    )
    assert [location["message"]["text"] for location in result["relatedLocations"]] == [
        "calls run\\[0\\]()", "step loop: iterates batches\\[0\\], calls opt.step()",
    ]


def test_github_annotation_carries_the_heat_note_under_the_message():
    line = annotation(TRACED)
    assert line.startswith("::warning file=utils.py,line=12,endLine=12,col=5,title=VP201 sync-in-hot-loop [MEDIUM]::")
    assert line.endswith("::`.item()` of `loss` in the per-step loop waits for the device every step%0Anote: " + NOTE)


def test_markdown_has_a_why_hot_line_with_code_spans():
    text = render_markdown(make_report([TRACED]))
    assert (
        "- **Why hot:** runs every step: `utils.py:43` calls log_metrics() inside the step loop at "
        "`train.py:30` (iterates train_loader, calls optimizer.step())\n"
    ) in text
    assert "Why hot" not in render_markdown(make_report([make_finding(heat=Heat.ONCE)]))


def test_a_trace_does_not_change_a_findings_identity_or_baseline_state(tmp_path):
    plain = replace(TRACED, heat_trace=())
    assert plain == TRACED and hash(plain) == hash(TRACED)
    comparison = with_baseline(tmp_path, [TRACED], [plain])
    assert comparison.states[TRACED] == "existing"
    stored = json.loads(render_json(make_report([plain])))["findings"][0]["fingerprint"]
    assert json.loads(render_json(make_report([TRACED])))["findings"][0]["fingerprint"] == stored
