"""`verify-perf server` as an editor meets it: diagnostics for an open file, updated as it is
edited, and a finding's fix applied through a code action."""

from __future__ import annotations

import textwrap

from lsprotocol import types

STEP = textwrap.dedent("""\
    import torch


    def train(model, loader, optimizer):
        for x, y in loader:
            optimizer.zero_grad(set_to_none=False)
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()
            optimizer.step()
            print(f"loss {loss.item():.3f}")
""")


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = edit.range.start, edit.range.end
        head = lines[start.line][: start.character]
        tail = lines[end.line][end.character:]
        lines[start.line: end.line + 1] = [head + edit.new_text + tail]
    return "".join(lines)


def test_an_open_file_gets_the_gates_findings_and_a_fix_applies_through_a_code_action(tmp_path, session_in):
    path = tmp_path / "train.py"
    path.write_text(STEP)
    # VP405's fix is in preview since its measured precision fell below the bar for fixes
    # (`rules/measured_precision.json`): the project opts in, as a user would.
    (tmp_path / "pyproject.toml").write_text("[tool.verify-perf]\npreview = true\n")

    async def body(session):
        shown = await session.open(path, STEP)
        actions = await session.actions(path, 5)
        fixed = _apply(STEP, next(iter(actions[0].edit.changes.values())))
        after = await session.change(path, fixed, 2)
        return shown, actions, fixed, after

    shown, actions, fixed, after = session_in(tmp_path, body)
    assert [(d.code, d.range.start.line + 1, d.range.start.character + 1, d.severity) for d in shown] == [
        ("VP306", 5, 5, types.DiagnosticSeverity.Hint),
        ("VP405", 6, 9, types.DiagnosticSeverity.Information),
        ("VP102", 7, 56, types.DiagnosticSeverity.Information),
        ("VP201", 10, 23, types.DiagnosticSeverity.Warning),
    ]
    sync = next(d for d in shown if d.code == "VP201")
    assert sync.source == "verify-perf"
    assert sync.message.endswith("[MEDIUM, every step]")
    assert [info.message for info in sync.related_information][0].startswith("step loop")
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        ("Call `zero_grad()` (set_to_none=True) (VP405, unsafe)", types.CodeActionKind.QuickFix, False)
    ]
    assert "optimizer.zero_grad()\n" in fixed and "set_to_none" not in fixed
    # The document as edited, unsaved: the fixed finding is gone, the others stay.
    assert sorted(d.code for d in after) == ["VP102", "VP201", "VP306"]
    assert path.read_text() == STEP  # the server never writes the file; the editor applies the edit


def test_a_file_the_configuration_excludes_gets_no_diagnostics(tmp_path, session_in):
    (tmp_path / "pyproject.toml").write_text('[tool.verify-perf]\nexclude = ["legacy"]\n')
    (tmp_path / "legacy").mkdir()
    path = tmp_path / "legacy" / "train.py"
    path.write_text(STEP)

    async def body(session):
        return await session.open(path, STEP)

    assert list(session_in(tmp_path, body)) == []


def test_a_document_that_does_not_parse_is_reported_and_the_server_goes_on(tmp_path, session_in):
    path = tmp_path / "train.py"
    path.write_text(STEP)
    broken = STEP.replace("for x, y in loader:", "for x, y in loader")

    async def body(session):
        return await session.open(path, broken), await session.change(path, STEP, 2)

    while_broken, mended = session_in(tmp_path, body)
    assert [(d.code, d.range.start.line + 1) for d in while_broken] == [("VP900", 5)]
    assert sorted(d.code for d in mended) == ["VP102", "VP201", "VP306", "VP405"]


def test_a_burst_of_keystrokes_is_analysed_once_for_the_text_it_leaves(tmp_path, session_in):
    import asyncio

    path = tmp_path / "train.py"
    path.write_text(STEP)
    typed = [STEP.replace("loss.item()", "loss.item()" + " " * n) for n in range(1, 4)]
    final = STEP.replace('print(f"loss {loss.item():.3f}")', "pass")

    async def body(session):
        await session.open(path, STEP)
        for version, text in enumerate([*typed, final], start=2):
            session.type(path, text, version)
        published = await session.next_published(path)
        try:
            again = await session.next_published(path, wait=1.0)
        except asyncio.TimeoutError:
            again = None
        return published, again

    published, again = session_in(tmp_path, body)
    assert sorted(d.code for d in published) == ["VP102", "VP306", "VP405"]  # the last text: no `.item()`
    assert again is None


def test_with_project_heat_a_helper_the_training_loop_calls_is_step_code(tmp_path, session_in):
    # The open file has no loop of its own: only the project's heat says `log_step` runs every step.
    (tmp_path / "pyproject.toml").write_text("[tool.verify-perf]\n")
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        from helper import log_step


        def train(model, loader, optimizer):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
                loss.backward()
                optimizer.step()
                log_step(loss)
    """))
    helper = tmp_path / "helper.py"
    text = "import torch\n\n\ndef log_step(loss):\n    torch.cuda.synchronize()\n"
    helper.write_text(text)

    async def body(session):
        return await session.open(helper, text)

    alone = session_in(tmp_path, body)
    with_project = session_in(tmp_path, body, "--heat-scope", "project")
    assert list(alone) == []
    assert [(d.code, d.range.start.line + 1, d.severity) for d in with_project] == [
        ("VP203", 5, types.DiagnosticSeverity.Error)
    ]


def test_a_malformed_message_is_answered_in_one_line_and_never_a_traceback(tmp_path):
    import subprocess
    import sys

    served = subprocess.run(
        [sys.executable, "-m", "verifier", "server"], input=b"Content-Length: 5\r\n\r\n{bad}",
        capture_output=True, timeout=60, cwd=tmp_path,
    )
    assert served.returncode == 0
    assert served.stderr.decode().splitlines() == ["verify-perf server: Unable to handle message"]
    assert b'"method": "window/showMessage"' in served.stdout
