"""Every rewrite on three small training files: the exact rewritten text (as a diff of the probed
file), the line map, and why a rewrite does not apply where it does not.

The expected outputs live in `fixtures/expected/<file>/<anchor>-<kind>.txt`; each was read and
checked by hand against the rewrite's contract (same behaviour, lines mapped to where the
statement went). After a deliberate change to a codemod, rewrite them with
`INVARIANCE_UPDATE_EXPECTED=1 pytest tests/realcode/invariance/test_rewrites.py` and read the diff.
"""

from __future__ import annotations

import difflib
import os
from functools import cache
from pathlib import Path

import pytest

from tests.realcode.inject.targets import Target
from tests.realcode.invariance.kinds import KINDS
from tests.realcode.invariance.probed import (
    NotApplicable,
    Pair,
    Probed,
    anchor_point,
    probe,
)

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = FIXTURES / "expected"
FILES = ("classifier_epoch.py", "char_script.py", "text_trainer.py")
UPDATE = os.environ.get("INVARIANCE_UPDATE_EXPECTED") == "1"

NOT_APPLICABLE = {
    ("classifier_epoch.py", "backward", "loss_indexed_output"): "the loss is not unpacked from a call's tuple",
    ("classifier_epoch.py", "backward", "loss_keyed_output"): "the loss is not read as `.loss` of a model output",
    ("classifier_epoch.py", "backward", "wrap_main"): "the loop is not module-level code",
    ("char_script.py", "backward", "loss_keyed_output"): "the loss is not read as `.loss` of a model output",
    ("char_script.py", "backward", "loss_dict_packed"): "the loss statement does not bind one plain name",
    ("text_trainer.py", "backward", "loss_indexed_output"): "the loss is not unpacked from a call's tuple",
    ("text_trainer.py", "backward", "wrap_main"): "the loop is not module-level code",
    ("text_trainer.py", "step", "loss_indexed_output"): "the loss is not unpacked from a call's tuple",
    ("text_trainer.py", "step", "wrap_main"): "the loop is not module-level code",
    ("text_trainer.py", "backward", "model_factory"): "`model` is not built by constructing a class (`model = Cls(...)`)",
    ("text_trainer.py", "step", "model_factory"): "`model` is not built by constructing a class (`model = Cls(...)`)",
}
CASES = [(f, "backward", k.name) for f in FILES for k in KINDS] + [("text_trainer.py", "step", k.name) for k in KINDS]


@cache
def _probed(fixture: str, anchor: str) -> Probed:
    return probe(Target("fixtures/corpus", fixture, "a corpus file"), str(FIXTURES), anchor)


def describe(pair: Pair) -> str:
    """The pair as text: the note, a diff per file, and the lines that did not stay in place."""
    out = [f"note: {pair.note}"]
    for path in sorted(set(pair.original) | set(pair.rewritten)):
        before = pair.original.get(path, "").splitlines()
        after = pair.rewritten.get(path, "").splitlines()
        out += difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", lineterm="", n=1)
    out.append("moved lines (original -> rewritten):")
    for (path, line), target in sorted(pair.line_map.items()):
        if target != (path, line):
            out.append(f"  {path}:{line} -> " + (f"{target[0]}:{target[1]}" if target else "removed"))
    out.append("probes: " + ", ".join(f"{probe} {path}:{line}" for (path, line), probe in sorted(pair.probe_sites.items())))
    # Stripped, so that an editor trimming trailing blanks cannot break the comparison.
    return "\n".join(line.rstrip() for line in out) + "\n"


@pytest.mark.parametrize("fixture, anchor, kind", CASES, ids=[f"{f[:-3]}-{a}-{k}" for f, a, k in CASES])
def test_rewrite_matches_the_expected_text_and_line_map(fixture, anchor, kind):
    make = next(k.make for k in KINDS if k.name == kind)
    expected = EXPECTED / fixture[:-3] / f"{anchor}-{kind}.txt"
    if (fixture, anchor, kind) in NOT_APPLICABLE:
        with pytest.raises(NotApplicable) as why:
            make(_probed(fixture, anchor))
        assert str(why.value) == NOT_APPLICABLE[(fixture, anchor, kind)]
        assert not expected.exists()
        return
    pair = make(_probed(fixture, anchor))
    for path, text in pair.rewritten.items():
        compile(text, path, "exec")
    if UPDATE:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(describe(pair), encoding="utf-8")
    assert describe(pair) == expected.read_text(encoding="utf-8")


def test_probed_file_has_the_probes_right_after_the_backward():
    probed = _probed("classifier_epoch.py", "backward")
    lines = probed.text.splitlines()
    assert lines[17:22] == [
        "        loss.backward()",
        "        loss.item()",
        "        float(loss)",
        "        _probe_history.append(loss)",
        "        torch.cuda.synchronize()",
    ]
    assert probed.probe_lines == {19: "item", 20: "float", 21: "history_append", 22: "cuda_synchronize"}


def test_the_step_anchor_is_the_optimizer_step_after_the_backward():
    probed = _probed("text_trainer.py", "step")
    lines = probed.text.splitlines()
    assert lines[23] == "                self.optimizer.step()"
    assert sorted(probed.probe_lines) == [25, 26, 27, 28]


def test_a_loop_without_an_optimizer_step_after_the_backward_has_no_step_anchor():
    source = (FIXTURES / "char_script.py").read_text(encoding="utf-8").replace("    optimizer.step()\n", "")
    target = Target("fixtures/corpus", "char_script.py", "a corpus file")
    assert anchor_point(target, source, "backward").statement_line == 33
    with pytest.raises(NotApplicable) as why:
        anchor_point(target, source, "step")
    assert str(why.value) == "no optimizer step statement after the backward in this loop"


def test_a_parameter_another_module_may_pass_by_keyword_is_not_renamed(tmp_path):
    (tmp_path / "classifier_epoch.py").write_text((FIXTURES / "classifier_epoch.py").read_text(encoding="utf-8"))
    (tmp_path / "sweep.py").write_text("from classifier_epoch import train_epoch\n\n"
                                       "def run(m, data, opt):\n    train_epoch(model=m, loader=data, optimizer=opt, device='cuda')\n")
    probed = probe(Target("fixtures/corpus", "classifier_epoch.py", "a corpus file"), str(tmp_path), "backward")
    with pytest.raises(NotApplicable) as why:
        next(k.make for k in KINDS if k.name == "rename_model")(probed)
    assert str(why.value) == "sweep.py may pass `model=` to train_epoch()"


def test_another_module_imports_a_module_that_several_imports_bind(tmp_path):
    source = (FIXTURES / "classifier_epoch.py").read_text(encoding="utf-8")
    source = source.replace("import torch\n", "import torch\nimport torch.utils.data\n", 1)
    (tmp_path / "classifier_epoch.py").write_text(source)
    probed = probe(Target("fixtures/corpus", "classifier_epoch.py", "a corpus file"), str(tmp_path), "backward")
    pair = next(k.make for k in KINDS if k.name == "extract_module")(probed)
    assert pair.rewritten["step_body.py"].splitlines()[:3] == [
        '"""The training step, moved out of the training script."""',
        "import torch",
        "import torch.utils.data",
    ]
    assert "_probe_history)" in pair.note and "torch" not in pair.note.split("(")[1]
