"""The command line's defaults decide which configuration branches the default run takes."""

from __future__ import annotations

import libcst as cst
import pytest

from verifier.config import Settings
from verifier.static.cli_defaults import CommandLine, defaults_defined_in
from verifier.static.runner import analyze_paths

SCRIPT = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--gradient_norm", type=float, default=-1.0)
parser.add_argument("--amp", action="store_true")
parser.add_argument("--no-compile", dest="compile", action="store_false")
parser.add_argument("--accum", type=int, default=1)
parser.add_argument("--lr", default="1e-3", type=float)
parser.add_argument("--resume")
parser.add_argument("--dataset", type=str, default="CelebA")
args = parser.parse_args()
"""


@pytest.mark.parametrize(
    ("test", "held"),
    [
        ("args.gradient_norm > 0", False),
        ("args.amp", False),
        ("not args.amp", True),
        ("args.compile", True),
        ("args.accum > 1", False),
        ("args.lr < 0.01", True),
        ("args.resume is not None", False),
        ("args.amp and torch.cuda.is_available()", False),
        ("torch.cuda.is_available() and args.compile", None),
        ("args.amp or args.compile", True),
        ("cfg.amp", None),
        ("args.unknown_option", None),
        ("args.dataset in ['CelebA', 'RaFD']", True),
        ("args.dataset in ['Both']", False),
        ("args.dataset not in ('Both',)", True),
        ("args.dataset in {'RaFD'}", False),
        ("args.dataset in [name, 'Both']", None),
        ("args.dataset in datasets", None),
    ],
)
def test_a_test_is_evaluated_under_the_defaults_in_three_values(test, held):
    command_line = CommandLine(SCRIPT)
    assert command_line.holds_by_default(cst.parse_expression(test)) is held


def test_a_required_option_has_no_default_the_run_uses():
    # `required=True` (or anything but a literal False): every command passes a value.
    script = SCRIPT + (
        'parser.add_argument("--config", type=str, required=True)\n'
        'parser.add_argument("--teacher", required=flag)\n'
        'parser.add_argument("--tag", required=False)\n'
    )
    command_line = CommandLine(script)
    assert command_line.holds_by_default(cst.parse_expression("args.config is None")) is None
    assert command_line.holds_by_default(cst.parse_expression("args.teacher is not None")) is None
    assert command_line.holds_by_default(cst.parse_expression("args.tag is None")) is True


def test_an_option_defined_twice_with_different_defaults_is_not_known():
    script = SCRIPT + 'other = argparse.ArgumentParser()\nother.add_argument("--accum", type=int, default=4)\n'
    command_line = CommandLine(script)
    assert command_line.holds_by_default(cst.parse_expression("args.accum > 1")) is None


OPT_IN_CLIP = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--clip", type=float, default={default})
args = parser.parse_args()
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = criterion(model(x.cuda()), y.cuda())
    scaler.scale(loss).backward()
    if args.clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    scaler.step(optimizer)
    scaler.update()
"""


def test_a_misuse_only_an_opted_in_setting_reaches_does_not_block(analyse):
    assert analyse(OPT_IN_CLIP.format(default="-1.0"), select=("VP302",)) == [("VP302", 13, "LOW")]
    assert analyse(OPT_IN_CLIP.format(default="1.0"), select=("VP302",)) == [("VP302", 13, "HIGH")]


def test_the_projects_options_and_config_fields_are_read_across_its_files():
    from verifier.static.cli_defaults import project_defaults

    run_py = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--use_amp", action="store_true")\n'
    config_py = (
        "from dataclasses import dataclass, field\n\n\n@dataclass\nclass TrainConfig:\n"
        "    use_liger_kernel: bool = field(default=False, metadata={})\n    compile: bool = True\n"
        "    lr: float = 1e-3\n"
    )
    other_py = "from dataclasses import dataclass\n\n\n@dataclass\nclass EvalConfig:\n    compile: bool = False\n"
    assert project_defaults([run_py, config_py, other_py]) == (
        ("lr", 0.001), ("use_amp", False), ("use_liger_kernel", False)
    )


def test_a_module_without_options_reads_the_projects_through_its_config_objects(tmp_path):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "exp.py").write_text(
        "import torch\n\n\nclass Exp:\n"
        "    def __init__(self, args):\n        self.args = args\n\n"
        "    def train(self, model, loader, optimizer):\n"
        "        for x in loader:\n"
        "            model(x.cuda()).sum().backward()\n"
        "            optimizer.step()\n"
        "            if self.args.clear_cache:\n"
        "                torch.cuda.empty_cache()\n"
    )

    def found():
        result = analyze_paths([str(tmp_path)], Settings(select=("VP403",)))
        return [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings]

    assert found() == [("exp.py", 13, "MEDIUM")]
    (tmp_path / "run.py").write_text(
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--clear_cache', action='store_true')\nargs = parser.parse_args()\n"
    )
    assert found() == [("exp.py", 13, "LOW")]


def test_a_config_object_named_like_one_reads_the_projects_dataclass_fields(tmp_path):
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    (tmp_path / "train_utils.py").write_text(
        "import torch\n\n\n"
        "def train(model, loader, optimizer, train_config):\n"
        "    history = []\n"
        "    for x in loader:\n"
        "        loss = model(x.cuda()).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        if train_config.save_metrics:\n"
        "            history.append(loss.detach().float().item())\n"
    )

    def found():
        result = analyze_paths([str(tmp_path)], Settings(select=("VP201",)))
        return [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings]

    assert found() == [("train_utils.py", 11, "MEDIUM")]
    # A field `save_metrics: bool = False` of the project's config dataclass: the read is opt-in.
    (tmp_path / "configs.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass train_config:\n"
        "    save_metrics: bool = False\n"
    )
    assert found() == [("train_utils.py", 11, "LOW")]


def test_reading_the_defaults_prints_no_warning_about_the_users_strings(recwarn):
    from verifier.static.cli_defaults import project_defaults

    text = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--pattern", default="a\\.b")\n'
    assert project_defaults([text]) == (("pattern", "a\\.b"),)
    assert not [w for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))]


def test_a_yacs_tree_of_defaults_is_read_by_its_paths():
    from verifier.static.cli_defaults import project_defaults

    defaults_py = (
        "from fvcore.common.config import CfgNode\n\n_C = CfgNode()\n_C.TRAIN = CfgNode()\n"
        "_C.TRAIN.ENABLE = True\n_C.TRAIN.CHECKPOINT_PERIOD = 10\n_C.DETECTION = CfgNode()\n"
        "_C.DETECTION.ENABLE = False\n_C.TRAIN.DATASET = 'kinetics'\n"
    )
    assert project_defaults([defaults_py]) == (
        ("DETECTION.ENABLE", False), ("TRAIN.CHECKPOINT_PERIOD", 10), ("TRAIN.DATASET", "kinetics"),
        ("TRAIN.ENABLE", True),
    )


@pytest.mark.parametrize(
    ("test", "held"),
    [
        ("cfg.DETECTION.ENABLE", False),
        ("self.cfg.TRAIN.ENABLE", True),
        ("cfg.TRAIN.CHECKPOINT_PERIOD > 1", True),
        ("not config.general.ignore_sanity_checks", False),
        ("self.config.general.ignore_sanity_checks", True),
        ("cfg.MODEL.ARCH == 'slowfast'", None),
        ("model.general.ignore_sanity_checks", None),
    ],
)
def test_sections_of_a_configuration_object_are_read_by_path_then_by_field(test, held):
    project = (
        ("DETECTION.ENABLE", False), ("TRAIN.CHECKPOINT_PERIOD", 10), ("TRAIN.ENABLE", True),
        ("ignore_sanity_checks", True),
    )
    command_line = CommandLine("import torch\n", project)
    assert command_line.holds_by_default(cst.parse_expression(test)) is held


OPT_IN_GROWTH = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--sequential", action="{action}")
args = parser.parse_args()
for x in loader:
    if args.sequential:
        preds = model(x[0].cuda())
        for clip in x[1:]:
            preds = torch.cat([preds, model(clip.cuda())])
        preds.sum().backward()
        optimizer.step()
"""


def test_a_finding_reported_after_its_walk_keeps_the_branch_it_sits_in(analyse):
    # VP406 reports once the loop is left; the opt-in branch around it still caps it.
    assert analyse(OPT_IN_GROWTH.format(action="store_true"), select=("VP406",), preview=True) == [("VP406", 11, "LOW")]
    assert analyse(OPT_IN_GROWTH.format(action="store_false"), select=("VP406",), preview=True) == [("VP406", 11, "MEDIUM")]


def test_an_option_copied_to_an_attribute_is_read_through_it():
    project = (("use_teacher_server", False), ("beta", 0.1))
    module = (
        "class Trainer:\n    def __init__(self, args):\n"
        "        self.use_teacher_server = args.use_teacher_server\n        self.beta = args.beta\n"
        "        self.model = build(args)\n"
    )
    command_line = CommandLine(module, project)
    assert command_line.holds_by_default(cst.parse_expression("self.use_teacher_server")) is False
    assert command_line.holds_by_default(cst.parse_expression("self.beta > 0")) is True
    assert command_line.holds_by_default(cst.parse_expression("self.model")) is None


RETURNED_OPTIONS = """\
import argparse


def main(options, device):
    if options.find_lr:
        pass


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--find-lr", action="store_true")
    parser.add_argument("--epochs", type=int, default=10)
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args(), "cuda")
    opt = parse_args()
"""


@pytest.mark.parametrize(
    ("test", "held"),
    [
        ("options.find_lr", False),  # `main(parse_args())`: main's parameter holds the options
        ("opt.epochs > 5", True),  # `opt = parse_args()`: a helper that returns them
        ("device.find_lr", None),  # another parameter of main holds no options
    ],
)
def test_options_returned_by_a_helper_are_read_where_they_are_passed(test, held):
    command_line = CommandLine(RETURNED_OPTIONS)
    assert command_line.holds_by_default(cst.parse_expression(test)) is held


def test_the_training_mode_flag_has_no_default_the_run_uses():
    # `--do_train` is passed by every command that trains: its default says nothing of a run.
    command_line = CommandLine(SCRIPT + 'parser.add_argument("--do_train", action="store_true")\n')
    assert command_line.holds_by_default(cst.parse_expression("args.do_train")) is None
    assert command_line.holds_by_default(cst.parse_expression("args.do_train and args.amp")) is False


DERIVED = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument('--no-prefetcher', action='store_true', default=False)


def train_one_epoch(model, loader, optimizer, args):
    for input, target in loader:
        if not args.prefetcher:
            input, target = input.cuda(), target.cuda()
        loss = model(input).sum()
        loss.backward()
        optimizer.step()


def main():
    args = parser.parse_args()
    args.prefetcher = not args.no_prefetcher
{rebound}    model = torch.nn.Linear(4, 4).cuda()
    train_one_epoch(model, [], torch.optim.SGD(model.parameters(), lr=0.1), args)
"""


def test_a_setting_derived_once_from_options_holds_what_their_defaults_give(tmp_path):
    assert defaults_defined_in(DERIVED.format(rebound="")) == (("no_prefetcher", False), ("prefetcher", True))
    (tmp_path / "train.py").write_text(DERIVED.format(rebound=""))
    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP102",))).findings
    assert (finding.line, finding.severity.name) == (10, "LOW")
    assert [e.status.value for e in finding.evidence if e.premise.value == "frequency"] == ["unknown"]


def test_a_setting_bound_twice_is_not_derived(tmp_path):
    rebound = "    if torch.cuda.device_count() > 1:\n        args.prefetcher = False\n"
    assert defaults_defined_in(DERIVED.format(rebound=rebound)) == (("no_prefetcher", False),)
    (tmp_path / "train.py").write_text(DERIVED.format(rebound=rebound))
    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP102",))).findings
    assert [e.status.value for e in finding.evidence if e.premise.value == "frequency"] == ["proven"]


def test_a_literal_set_under_a_branch_is_no_derived_setting():
    # `args.multiprocessing_distributed = False` for one GPU overrides a setting read elsewhere
    # (a YAML configuration): it reads no option and runs only on that branch.
    code = DERIVED.format(rebound="").replace(
        "    args.prefetcher = not args.no_prefetcher\n",
        "    args.prefetcher = not args.no_prefetcher\n    if len(gpus) == 1:\n        args.multiprocessing_distributed = False\n",
    ) + "\nargs.world_size = 1\n"
    assert defaults_defined_in(code) == (("no_prefetcher", False), ("prefetcher", True))
