"""All fixes of a file in one libcst pass: the rest of the file exactly as it was, a fix whose code
moved or changed left out, and a result that would not compile refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from verifier.findings import Autofix, Edit, Finding
from verifier.fixes.apply import FixFailed, apply_fixes

TRAIN = (
    "import torch\r\n"
    "\r\n"
    "# Loss scaling for the fp16 run; 1024 found by sweeping.\r\n"
    "scaler = torch.cuda.amp.GradScaler(init_scale=1024)  # was 65536\r\n"
    "for images, labels in loader:\r\n"
    "    optimizer.zero_grad(set_to_none=False)\r\n"
    "    with torch.cuda.amp.autocast(\r\n"
    "        dtype=torch.bfloat16,  # the A100s run bf16\r\n"
    "    ):\r\n"
    "        loss = criterion(model(images), labels)\r\n"
    "    scaler.scale(loss).backward()\r\n"
    "    scaler.step(optimizer)\r\n"
    "    scaler.update()\r\n"
)


def test_every_fix_of_a_file_is_applied_in_one_pass_and_the_rest_is_kept_byte_for_byte(offered):
    findings = offered(TRAIN, "VP308", "VP405")
    assert [(f.code, f.line) for f in findings] == [("VP308", 4), ("VP405", 6), ("VP308", 7)]
    fixed = apply_fixes(TRAIN, findings)
    assert fixed.applied == tuple(findings) and fixed.stale == ()
    assert fixed.text == (
        "import torch\r\n"
        "\r\n"
        "# Loss scaling for the fp16 run; 1024 found by sweeping.\r\n"
        'scaler = torch.amp.GradScaler("cuda", init_scale=1024)  # was 65536\r\n'
        "for images, labels in loader:\r\n"
        "    optimizer.zero_grad()\r\n"
        "    with torch.autocast(\r\n"
        '        "cuda",\r\n'
        "        dtype=torch.bfloat16,  # the A100s run bf16\r\n"
        "    ):\r\n"
        "        loss = criterion(model(images), labels)\r\n"
        "    scaler.scale(loss).backward()\r\n"
        "    scaler.step(optimizer)\r\n"
        "    scaler.update()\r\n"
    )


def test_a_fix_whose_code_changed_since_the_analysis_is_left_out(offered):
    findings = offered(TRAIN, "VP308", "VP405")
    edited = TRAIN.replace("set_to_none=False", "set_to_none=False if keep else True")
    fixed = apply_fixes(edited, findings)
    assert [f.code for f in fixed.applied] == ["VP308", "VP308"]
    assert [(f.code, f.line) for f in fixed.stale] == [("VP405", 6)]
    assert "zero_grad(set_to_none=False if keep else True)" in fixed.text


def _with_replacement(finding: Finding, replacement: str) -> Finding:
    (edit,) = finding.autofix.edits
    return replace(finding, autofix=replace(finding.autofix, edits=(replace(edit, replacement=replacement),)))


def test_a_result_that_would_not_compile_is_refused(offered):
    (finding,) = offered(TRAIN, "VP405")
    # Parses, but `await` outside an async function does not compile.
    with pytest.raises(FixFailed) as refused:
        apply_fixes(TRAIN, [_with_replacement(finding, "await optimizer.zero_grad()")])
    assert str(refused.value) == "the fixed file would not compile ('await' outside function)"


def test_a_replacement_that_does_not_parse_is_refused(offered):
    (finding,) = offered(TRAIN, "VP405")
    with pytest.raises(FixFailed) as refused:
        apply_fixes(TRAIN, [_with_replacement(finding, "optimizer.zero_grad(")])
    assert str(refused.value) == "a fix's replacement does not parse: 'optimizer.zero_grad('"


def test_positions_after_a_fix_move_with_the_text():
    text = "y = f(a) + g(b)\nz = 1\n"
    edit = Edit("Call", 1, 5, 1, 9, "f(a)", "h(a, c)")
    fixed = apply_fixes(text, [Finding("train.py", 1, 5, "VP999", autofix=Autofix("Use h", True, (edit,)))])
    assert fixed.text == "y = h(a, c) + g(b)\nz = 1\n"
    # Before the edit, at its start, inside it, after it on its line, and on a later line.
    assert [fixed.moved(p) for p in [(1, 0), (1, 4), (1, 6), (1, 11), (2, 0)]] == [(1, 0), (1, 4), (1, 4), (1, 14), (2, 0)]
