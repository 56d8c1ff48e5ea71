"""Every path-kind generator on the fixtures: the code it writes compiles, keeps the original
lines, and puts each probe (and the call that reaches it) where the manifest says."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from tests.realcode.inject.edits import FileEdit, Line
from tests.realcode.inject.finder import find_training_loops
from tests.realcode.inject.path_kinds import KINDS, Site, inject
from tests.realcode.inject.probes import API_ALIASES, PROBES
from tests.realcode.inject.training_file import aliases_and_imports, module_facts

FIXTURES = Path(__file__).parent / "fixtures"
NOT_IN_A_CLASS = {"self_method", "init_attribute"}

# A fragment of each probe's costly line, whatever the subject's spelling.
SIGNATURES = {
    "item": ".item()",
    "float": "float(",
    "bool_if": "bool(",
    "fstring_print": 'print(f"{',
    "cpu_numpy": ".cpu().numpy()",
    "tolist": ".tolist()",
    "np_asarray": ".asarray(",
    "nonzero": ".nonzero()",
    "bool_mask": ".reshape(-1) > 0]",
    "host_tensor_to_device": ".zeros(4).to(",
    "per_row_forward": "[model(row) for row in ",
    "history_append": "_probe_history.append(",
    "all_reduce_logging": ".distributed.all_reduce(",
    "subprocess_run": '.run(["nvidia-smi"])',
    "empty_cache": ".cuda.empty_cache()",
    "cuda_synchronize": ".cuda.synchronize()",
    "event_synchronize": ".cuda.Event().synchronize()",
    "stream_synchronize": ".cuda.current_stream().synchronize()",
}


@lru_cache(maxsize=None)
def _site(fixture: str, package: str | None = None) -> Site:
    source = (FIXTURES / fixture).read_text(encoding="utf-8")
    (point,) = find_training_loops(source, fixture)
    module = f"{package}.probe_helpers" if package else "probe_helpers"
    return Site(fixture, source, point, PROBES, "probe_helpers.py", module)


@lru_cache(maxsize=None)
def _injection(fixture: str, kind: str):
    return inject(kind, _site(fixture))


CASES = [(fixture, kind) for fixture in ("train_script.py", "trainer_class.py") for kind in KINDS]


@pytest.mark.parametrize("fixture, kind", CASES, ids=[f"{f[:-3]}-{k}" for f, k in CASES])
def test_generated_code_compiles_and_the_manifest_points_at_the_probes(fixture, kind):
    injection = _injection(fixture, kind)
    if fixture == "train_script.py" and kind in NOT_IN_A_CLASS:
        assert injection is None
        return
    assert injection is not None
    for path, text in injection.files.items():
        compile(text, path, "exec")
    assert [s.probe for s in injection.sites] == [p.name for p in PROBES]
    training = injection.files[fixture].splitlines()
    for probe_site in injection.sites:
        line = injection.files[probe_site.path].splitlines()[probe_site.line - 1]
        if kind == "alias" and probe_site.probe in API_ALIASES:
            # The costly call is the alias's call in the loop; the binding names the API.
            assert line.strip().startswith(f"probe_{probe_site.probe}_alias(")
            binding = next(t for t in training if t.strip().startswith(f"probe_{probe_site.probe}_alias ="))
            assert SIGNATURES[probe_site.probe].split("(")[0].rstrip(".") in binding
        else:
            assert SIGNATURES[probe_site.probe] in line, (probe_site, line)
        assert probe_site.call_path == fixture
        # The call names the probe's helper, or calls it from a loop over a list that does.
        call = "\n".join(training[probe_site.call_line - 2:probe_site.call_line])
        camel = "".join(part.capitalize() for part in probe_site.probe.split("_"))
        assert probe_site.call_line == probe_site.line or f"probe_{probe_site.probe}" in call \
            or f"Probe{camel}Context(" in call, (probe_site, call)


@pytest.mark.parametrize("fixture, kind", CASES, ids=[f"{f[:-3]}-{k}" for f, k in CASES])
def test_calls_come_right_after_the_backward_in_probe_order(fixture, kind):
    site = _site(fixture)
    injection = _injection(fixture, kind)
    if injection is None:
        return
    training = injection.files[fixture].splitlines()
    anchor = next(i for i, t in enumerate(training, start=1) if t.strip() == site.source.splitlines()[
        site.point.statement_line - 1].strip())
    calls = [s.call_line for s in injection.sites]
    assert calls == sorted(calls) and calls[0] > anchor
    # Nothing but injected lines between the backward and the last call.
    original = set(site.source.splitlines()[site.point.statement_line:])
    assert not any(training[i - 1] in original for i in range(anchor + 1, calls[-1]) if training[i - 1].strip())
    indent = site.point.indent
    assert all(training[line - 1].startswith(indent) and not training[line - 1][len(indent)].isspace()
               for line in calls if kind != "callback_list")


@pytest.mark.parametrize("fixture, kind", CASES, ids=[f"{f[:-3]}-{k}" for f, k in CASES])
def test_original_lines_are_kept_in_order(fixture, kind):
    site = _site(fixture)
    injection = _injection(fixture, kind)
    if injection is None:
        return
    remaining = iter(line.strip() for line in injection.files[fixture].splitlines())
    # Stripped, because the context manager re-indents the rest of the step under its `with`.
    assert all(line.strip() in remaining for line in site.source.splitlines())


def test_context_manager_wraps_the_rest_of_the_step():
    site = _site("trainer_class.py")
    text = inject("context_manager", site).files["trainer_class.py"].splitlines()
    with_line = next(i for i, t in enumerate(text) if t.lstrip().startswith("with ProbeItemContext(loss)"))
    assert text[with_line].startswith(" " * 8 + "with ")
    assert text[with_line + 1] == " " * 10 + "self.optimizer.step()"
    assert text[with_line + 3] == " " * 12 + 'print("diverged")'
    assert text[with_line + 4] == " " * 6 + 'print(f"epoch {epoch} took {time.time() - started:.1f}s")'


def test_context_manager_with_nothing_after_the_backward_gets_a_pass():
    site = _site("train_script.py")
    text = inject("context_manager", site).files["train_script.py"].splitlines()
    with_line = next(i for i, t in enumerate(text) if t.lstrip().startswith("with ProbeItemContext(loss)"))
    assert text[with_line + 1] == " " * 12 + "pass"
    assert text[with_line + 2] == "    scaler.step(optimizer)"


def test_helper_module_is_imported_by_its_package_name():
    site = _site("trainer_class.py", package="trainers")
    injection = inject("helper_module", site)
    assert "probe_helpers.py" in injection.files
    assert any(t.startswith("from trainers.probe_helpers import probe_item, ") for t in injection.files["trainer_class.py"].splitlines())
    assert {s.path for s in injection.sites} == {"probe_helpers.py"}


def test_inherited_method_lives_in_the_helper_module_base_class():
    injection = inject("inherited_method", _site("train_script.py"))
    helper = injection.files["probe_helpers.py"]
    assert "class ProbeBase:" in helper and "def probe_item(self, loss):" in helper
    assert "class ProbeRunner(ProbeBase):" in injection.files["train_script.py"]


def test_the_files_own_torch_alias_is_used_and_missing_imports_are_added_after_the_header():
    injection = inject("inline", _site("train_script.py"))
    lines = injection.files["train_script.py"].splitlines()
    assert lines[1] == "from __future__ import annotations"
    assert lines[2:4] == ["import numpy as probe_np", "import subprocess as probe_subprocess"]
    assert any(t.strip() == "th.cuda.synchronize()" for t in lines)
    assert "import torch" not in lines


def test_module_facts_and_aliases():
    source = '#!/usr/bin/env python\n"""doc"""\nimport torch as th\nimport numpy\nimport os.path\n'
    facts = module_facts(source)
    assert facts.header_line == 2
    assert facts.bound == {"torch": "th", "numpy": "numpy", "os": "os"}
    names, imports = aliases_and_imports(facts, {"torch", "numpy", "subprocess"})
    assert (names.torch, names.numpy, names.subprocess) == ("th", "numpy", "probe_subprocess")
    assert imports == ["import subprocess as probe_subprocess"]
    assert module_facts("# licence\n# more\nimport os\n").header_line == 2


def test_file_edit_reports_where_tagged_lines_land():
    edit = FileEdit("a\nb\nc\n")
    edit.insert_after(0, [Line("top", ("p0",), "probe")])
    edit.insert_after(2, [Line("x"), Line("y", ("p1",), "call")])
    edit.insert_after(2, [Line("z", ("p2",), "probe")])
    edit.indent_range(3, 3, "  ")
    text, tags = edit.render()
    assert text == "top\na\nb\nx\ny\nz\n  c\n"
    assert tags == {("p0", "probe"): 1, ("p1", "call"): 5, ("p2", "probe"): 6}
