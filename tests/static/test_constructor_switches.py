"""A constructor's switch that nothing in the project sets keeps its default: code under the
branch the default skips is opt-in (LOW, frequency unknown), like code under an argparse
option's default. Anything that could pass another value (a keyword, enough positional
arguments, unpacking, a store, a string, handing the class on, a subclass, `cls(...)`) or a class
nobody here constructs leaves the branch as it was (HIGH: a per-step `synchronize()`)."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.constructor_switches import Switch, project_switches, switches_in
from verifier.static.runner import analyze_paths

LOSS = """\
import torch


class StepLoss:
    def __init__(self, model, blocking_sync=False):
        self.model = model
        self.blocking_sync = blocking_sync

    def __call__(self, batch):
        loss = self.model(batch).pow(2).mean()
        if self.blocking_sync:
            torch.cuda.synchronize()
        return loss
"""

TRAIN = """\
import torch
{imports}


def main():
    device = torch.device("cuda")
    model = torch.nn.Linear(8, 8).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{before}    criterion = {construct}
    for step in range(1000):
        loss = criterion(torch.randn(8, 8, device=device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def findings(root, construct="StepLoss(model)", loss=LOSS, imports="from loss import StepLoss", before="", extra=None, cache=None):
    files = {"loss.py": loss, "train.py": TRAIN.format(construct=construct, imports=imports, before=textwrap.indent(before, " " * 4)), **(extra or {})}
    for name, code in files.items():
        (root / name).write_text(code)
    result = analyze_paths([str(root)], Settings(select=("VP203",), cache_dir=cache))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name) for f in result.findings], result.findings


def test_a_switch_nothing_sets_keeps_its_branch_opt_in(tmp_path):
    found, [finding] = findings(tmp_path)
    assert found == [("loss.py", "VP203", 12, "LOW")]
    assert [(e.status.value, e.text) for e in finding.evidence if e.premise.value == "frequency"] == [(
        "unknown",
        "runs only when `self.blocking_sync` holds, which the defaults leave false (the configuration's, the "
        "constructor's where nothing in the project passes another value, or what every call in the project "
        "passes): an opt-in setting",
    )]


@pytest.mark.parametrize(
    ("construct", "before"),
    [
        ("StepLoss(model, blocking_sync=True)", ""),
        ("StepLoss(model, True)", ""),
        ("StepLoss(*parts)", "parts = [model, True]\n"),
        ("StepLoss(model, **options)", "options = {}\n"),
        ("StepLoss(model)", "losses = {'step': StepLoss}\n"),
        ("StepLoss(model)", "chosen = StepLoss if device.type == 'cuda' else None\n"),
        ("StepLoss(model)\n    criterion.blocking_sync = True", ""),
        ("StepLoss(model)\n    setattr(criterion, 'blocking_sync', True)", ""),
    ],
    ids=["keyword", "positional", "star", "double-star", "handed-on", "chosen-class", "attribute-store", "setattr"],
)
def test_anything_that_could_set_it_keeps_the_heat(tmp_path, construct, before):
    assert findings(tmp_path, construct, before=before)[0] == [("loss.py", "VP203", 12, "HIGH")]


def test_a_class_nobody_here_constructs_is_the_users_to_configure():
    library = LOSS + "\n\ndef fit(criterion, batches):\n    for batch in batches:\n        criterion(batch).backward()\n"
    assert project_switches([library]).kept == ()
    assert project_switches([library, "from loss import StepLoss\n\nloss = StepLoss(None)\n"]).kept == (
        ("StepLoss(blocking_sync)", False),
    )


def test_a_subclass_or_a_factory_keeps_the_heat(tmp_path):
    subclass = "from loss import StepLoss\n\n\nclass Strict(StepLoss):\n    pass\n"
    assert findings(tmp_path, extra={"strict.py": subclass})[0] == [("loss.py", "VP203", 12, "HIGH")]
    factory = LOSS + "\n    @classmethod\n    def strict(cls, model):\n        return cls(model, True)\n"
    assert findings(tmp_path, loss=factory)[0] == [("loss.py", "VP203", 12, "HIGH")]


def test_an_import_alias_is_the_same_class(tmp_path):
    found = findings(tmp_path, "Criterion(model)", imports="from loss import StepLoss as Criterion")[0]
    assert found == [("loss.py", "VP203", 12, "LOW")]


def test_the_else_of_a_switch_that_defaults_to_true_is_opt_in(tmp_path):
    loss = LOSS.replace("blocking_sync=False", "overlap=True").replace(
        "self.blocking_sync = blocking_sync", "self.overlap = overlap"
    ).replace("if self.blocking_sync:", "if self.overlap:\n            pass\n        else:")
    assert findings(tmp_path, loss=loss)[0] == [("loss.py", "VP203", 14, "LOW")]


def test_tuple_copies_and_forwards_to_the_base_are_copies(tmp_path):
    tupled = LOSS.replace(
        "        self.model = model\n        self.blocking_sync = blocking_sync",
        "        self.model, self.blocking_sync = model, blocking_sync",
    )
    assert findings(tmp_path, loss=tupled)[0] == [("loss.py", "VP203", 11, "LOW")]
    forwarded = LOSS.replace("class StepLoss:", "class Base:\n    def __init__(self, blocking_sync):\n        self.blocking_sync = blocking_sync\n\n\nclass StepLoss(Base):").replace(
        "        self.blocking_sync = blocking_sync\n\n    def __call__",
        "        super().__init__(blocking_sync=blocking_sync)\n\n    def __call__",
    )
    assert findings(tmp_path, loss=forwarded)[0] == [("loss.py", "VP203", 17, "LOW")]


def test_a_parameter_bound_again_or_a_decorated_class_defines_no_switch():
    rebound = LOSS.replace("        self.model = model\n", "        self.model = model\n        blocking_sync = blocking_sync or model is None\n")
    assert switches_in(rebound) == ()
    assert switches_in(LOSS.replace("class StepLoss:", "@register\nclass StepLoss:")) == ()
    assert switches_in(LOSS) == (Switch("StepLoss", "blocking_sync", "blocking_sync", 1, False),)


def test_the_record_reads_again_only_what_changed():
    train = TRAIN.format(construct="StepLoss(model)", imports="from loss import StepLoss", before="")
    first = project_switches([LOSS, train])
    assert first.kept == (("StepLoss(blocking_sync)", False),)
    assert project_switches([LOSS, train], first) is first
    edited = project_switches([LOSS, train.replace("StepLoss(model)", "StepLoss(model, blocking_sync=True)")], first)
    assert edited.kept == ()
    assert project_switches([LOSS, train + "\n# a comment\n"], edited).kept == first.kept


def test_an_edit_that_sets_the_switch_is_seen_through_the_cache(tmp_path):
    project, cache = tmp_path / "project", str(tmp_path / "cache")
    project.mkdir()
    assert findings(project, cache=cache)[0] == [("loss.py", "VP203", 12, "LOW")]
    assert findings(project, "StepLoss(model, blocking_sync=True)", cache=cache)[0] == [("loss.py", "VP203", 12, "HIGH")]
    assert findings(project, cache=cache)[0] == [("loss.py", "VP203", 12, "LOW")]


def test_an_opt_in_branch_under_a_rate_limited_call_is_the_weaker_premise(tmp_path):
    # The rate limit alone says "every few steps" (assumed, MEDIUM at most); the switch nobody
    # sets says "not in the default run" (unknown): the weakest premise on the path decides.
    train = TRAIN.replace(
        "        loss = criterion(torch.randn(8, 8, device=device))",
        "        loss = model(torch.randn(8, 8, device=device)).mean()\n"
        "        if step % 10 == 0:\n            loss = loss + criterion(torch.randn(8, 8, device=device))",
    )
    (tmp_path / "loss.py").write_text(LOSS)
    (tmp_path / "train.py").write_text(train.format(construct="StepLoss(model)", imports="from loss import StepLoss", before=""))
    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP203",))).findings
    assert (finding.line, finding.severity.name) == (12, "LOW")
    assert [e.status.value for e in finding.evidence if e.premise.value == "frequency"] == ["unknown"]
    (tmp_path / "train.py").write_text(train.format(construct="StepLoss(model, True)", imports="from loss import StepLoss", before=""))
    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP203",))).findings
    assert (finding.line, finding.severity.name) == (12, "MEDIUM")


def test_a_class_listed_in_a_package_export_list_is_not_handed_on(tmp_path):
    # `__all__` exports the name to importers; nothing in the project calls the class through it.
    exports = '"""The package."""\nfrom loss import StepLoss\n\n__all__ = [\n    "StepLoss",\n]\n'
    assert findings(tmp_path, extra={"package.py": exports})[0] == [("loss.py", "VP203", 12, "LOW")]
    # Any other mention in quotes may construct it by name: the heat holds.
    by_name = 'from loss import StepLoss\n\nregistry = {"loss": "StepLoss"}\n'
    assert findings(tmp_path, extra={"package.py": by_name})[0] == [("loss.py", "VP203", 12, "HIGH")]
