"""A function whose every call, across the project, runs under an opt-in setting (a command-line
default keeps the branch off) is not what the default run does: the loops inside it are hot only
in that configuration, so its findings' frequency premise is unknown and they stay LOW. One call
that the default run makes is enough to keep them as they were."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.runner import analyze_paths

DISCRIMINATOR = """\
import torch


class Discriminator:
    def __init__(self, net, optimizer, device):
        self.net = net.to(device)
        self.optimizer = optimizer
        self.device = device

    def update(self, loader):
        for real, fake in loader:
            score = self.net(real.to(self.device)) - self.net(fake.to(self.device))
            loss = score.mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            print(loss.item())
"""

MAIN = """\
import argparse

import torch
from adversary import Discriminator
{imports}

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adversary", action="store_true", default=False)
    args = parser.parse_args()
    device = torch.device("cuda")
    policy = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    discriminator = Discriminator(torch.nn.Linear(4, 1), optimizer, device)
    for update in range(1000):
        loss = policy(torch.randn(8, 4, device=device)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
{call}


if __name__ == "__main__":
    main()
"""


def analyse(root, call: str, extra: dict[str, str] | None = None, imports: str = ""):
    main = MAIN.format(call=textwrap.indent(call, " " * 8), imports=imports)
    files = {"adversary.py": DISCRIMINATOR, "main.py": main, **(extra or {})}
    for name, code in files.items():
        (root / name).write_text(code)
    result = analyze_paths([str(root)], Settings(select=("VP201",)))
    return result.findings


def test_a_function_only_an_opt_in_flag_calls_keeps_its_findings_low(tmp_path):
    found = analyse(tmp_path, "if args.adversary:\n    discriminator.update(expert_loader)")
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "LOW")]
    trace = [(step.path.rsplit("/", 1)[-1], step.line, step.what, step.branch, step.branch_kind) for step in found[0].heat_trace]
    assert trace == [
        ("adversary.py", 11, "step loop: iterates loader, calls self.optimizer.step()", "", ""),
        ("main.py", 21, "calls update(), and every call the project shows is opt-in", "args.adversary", "opt_in"),
    ]
    frequency = [(e.status.value, e.text) for e in found[0].evidence if e.premise.value == "frequency"]
    assert frequency == [(
        "unknown",
        "runs only when `args.adversary` holds at the call, which the defaults leave false (the configuration's, the constructor's where nothing in the project passes another value, or what every call in the project passes): an opt-in setting",
    )]


def test_a_call_the_default_run_makes_keeps_the_finding(tmp_path):
    found = analyse(tmp_path, "discriminator.update(expert_loader)")
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "MEDIUM")]
    assert [step.branch_kind for step in found[0].heat_trace] == [""]


def test_one_default_call_beside_an_opt_in_one_is_enough(tmp_path):
    found = analyse(tmp_path, "if args.adversary:\n    discriminator.update(expert_loader)\ndiscriminator.update(expert_loader)")
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "MEDIUM")]


def test_a_caller_that_is_itself_opt_in_only_passes_it_on(tmp_path):
    helper = (
        "import torch\nfrom adversary import Discriminator\n\n\ndef imitate(optimizer, loader):\n"
        "    discriminator = Discriminator(torch.nn.Linear(4, 1), optimizer, torch.device('cuda'))\n"
        "    discriminator.update(loader)\n"
    )
    found = analyse(
        tmp_path, "if args.adversary:\n    imitate(optimizer, expert_loader)", {"imitation.py": helper},
        imports="from imitation import imitate",
    )
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "LOW")]
    assert [(step.path.rsplit("/", 1)[-1], step.line, step.branch_kind) for step in found[0].heat_trace] == [
        ("adversary.py", 11, ""), ("main.py", 21, "opt_in"),  # through imitation.py's unconditional call
    ]


def test_a_function_nobody_here_calls_is_not_opt_in(tmp_path):
    found = analyse(tmp_path, "pass")
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "MEDIUM")]


def test_a_setting_tested_for_membership_decides_the_branch(tmp_path):
    # `elif args.dataset in ['Both']:` with `default='CelebA'`: the default run never takes it.
    (tmp_path / "adversary.py").write_text(DISCRIMINATOR)
    (tmp_path / "main.py").write_text(textwrap.dedent("""\
        import argparse

        import torch
        from adversary import Discriminator


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--dataset", type=str, default="CelebA", choices=["CelebA", "RaFD", "Both"])
            args = parser.parse_args()
            discriminator = Discriminator(torch.nn.Linear(4, 1), None, torch.device("cuda"))
            if args.dataset in ["CelebA", "RaFD"]:
                pass
            elif args.dataset in ["Both"]:
                discriminator.update(expert_loader)


        if __name__ == "__main__":
            main()
        """))
    found = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "LOW")]
    assert [(step.line, step.branch, step.branch_kind) for step in found[0].heat_trace[1:]] == [
        (15, "args.dataset in [\"Both\"]", "opt_in"),
    ]


@pytest.mark.parametrize(
    ("operator", "severity", "branch_kind"),
    [
        # `rank == 0` depends on the process, `args.adversary` is off by default: the branch is off.
        ("and", "LOW", "opt_in"),
        # `or`: the data part alone may take the branch in the default run.
        ("or", "MEDIUM", ""),
    ],
)
def test_an_opt_in_flag_beside_a_data_test(tmp_path, operator, severity, branch_kind):
    found = analyse(
        tmp_path,
        "rank = int(torch.distributed.get_rank())\n"
        f"if rank == 0 {operator} args.adversary:\n    discriminator.update(expert_loader)",
    )
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, severity)]
    assert [step.branch_kind for step in found[0].heat_trace][-1] == branch_kind


def test_a_flag_that_names_the_training_mode_is_no_opt_in(tmp_path):
    # `--do_train` is off by default, and every command that trains passes it: what it guards is
    # what the script is run for, not an optional feature.
    main = MAIN.replace('parser.add_argument("--adversary", action="store_true", default=False)',
                        'parser.add_argument("--do_train", action="store_true")')
    (tmp_path / "adversary.py").write_text(DISCRIMINATOR)
    (tmp_path / "main.py").write_text(main.format(call=textwrap.indent("if args.do_train:\n    discriminator.update(expert_loader)", " " * 8), imports=""))
    found = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    assert [(f.path.rsplit('/', 1)[-1], f.code, f.line, f.severity.name) for f in found] == [("adversary.py", "VP201", 17, "MEDIUM")]
