"""Heat crosses imports between analysed files: a helper called per batch elsewhere is step code."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.static.discovery import module_name_for
from verifier.static.parallel import AnalysisPool
from verifier.static.runner import analyze_paths
from verifier.static.heat import absolute_name

HELPERS = """
    def read_loss(loss):
        return loss.item()

    def read_twice(loss):
        return loss.item()

    def to_device(batch, device):
        return batch.to(device, non_blocking=True)
"""


def write(root, files: dict[str, str]) -> None:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))


def findings(root, select: tuple[str, ...] = ("VP2",), **settings) -> list[tuple[str, str, int, str, str]]:
    result = analyze_paths([str(root)], Settings(select=select, **settings))
    return [
        (f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name, f.heat.label)
        for f in result.findings
    ]


@pytest.fixture
def analysed_again(monkeypatch) -> list[str]:
    """The names of the files the project-wide pass sends to be analysed a second time."""
    again: list[str] = []
    original = AnalysisPool.analyse

    def spy(pool, paths, codes, settings, external=None, deadline=None):
        if external is not None:
            again.extend(p.rsplit("/", 1)[-1] for p in paths)
        return original(pool, paths, codes, settings, external, deadline)

    monkeypatch.setattr(AnalysisPool, "analyse", spy)
    return again


def test_from_import_in_a_script_folder(tmp_path):
    write(tmp_path, {
        "helpers.py": HELPERS,
        "train.py": """
            from helpers import read_loss
            for x in loader:
                loss = model(x).sum()
                loss.backward()
                read_loss(loss)
        """,
    })
    assert findings(tmp_path) == [("helpers.py", "VP201", 3, "LOW", "step")]


def test_module_attribute_and_relative_imports_in_a_package(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "",
        "pkg/utils/metrics.py": HELPERS,
        "pkg/train.py": """
            from . import utils
            from .utils import metrics
            from .utils.metrics import read_twice as second

            def fit(loader):
                for x in loader:
                    loss = model(x).sum()
                    loss.backward()
                    metrics.read_loss(loss)
                    second(loss)
        """,
    })
    assert findings(tmp_path) == [
        ("metrics.py", "VP201", 3, "LOW", "step"),
        ("metrics.py", "VP201", 6, "LOW", "step"),
    ]


def test_a_loop_calling_an_imported_training_step_is_a_step_loop(tmp_path):
    write(tmp_path, {
        "steps.py": """
            def train_step(model, batch, optimizer):
                model(batch).mean().backward()
                optimizer.step()
        """,
        "run.py": """
            from steps import train_step

            model.cuda()
            for i in range(total):
                train_step(model, next(stream), optimizer)
                print(model.weight.sum().item())
        """,
    })
    # A parameter of a module moved with `.cuda()` is shown on the accelerator: the read is proven.
    assert findings(tmp_path) == [("run.py", "VP201", 7, "MEDIUM", "step")]


def test_helpers_not_called_from_hot_code_stay_cold(tmp_path):
    write(tmp_path, {
        "helpers.py": HELPERS,
        "report.py": """
            from helpers import read_loss
            print(read_loss(final_loss))
        """,
    })
    assert findings(tmp_path) == []


def test_module_names_and_relative_resolution(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": "", "script.py": ""})
    assert module_name_for(str(tmp_path / "pkg" / "sub" / "mod.py")) == "pkg.sub.mod"
    assert module_name_for(str(tmp_path / "pkg" / "sub" / "__init__.py")) == "pkg.sub"
    assert module_name_for(str(tmp_path / "script.py")) == "script"
    assert absolute_name(".utils.f", "pkg.train") == "pkg.utils.f"
    assert absolute_name("..utils.f", "pkg.sub.train") == "pkg.utils.f"
    assert absolute_name("torch.stack", "pkg.train") == "torch.stack"


def test_only_files_whose_heat_the_project_changed_are_analysed_again(tmp_path, analysed_again):
    write(tmp_path, {
        "helpers.py": HELPERS,
        "report.py": """
            import torch

            def summary(loss):
                return loss.item()

            def gpu_memory(device):
                return torch.cuda.max_memory_allocated(device)
        """,
        "train.py": """
            from helpers import read_loss
            for x in loader:
                loss = model(x).sum()
                loss.backward()
                read_loss(loss)
        """,
    })
    assert findings(tmp_path) == [("helpers.py", "VP201", 3, "LOW", "step")]
    # report.py has a candidate too, but nothing elsewhere calls it: its heat is unchanged.
    assert analysed_again == ["helpers.py"]


def test_test_code_a_training_loop_calls_is_not_analysed_again_unless_tests_are_included(tmp_path, analysed_again):
    """Every finding in test code reports at "once" (pytest's layout, `include-tests` off), so a
    helper there that the training loop calls every step reads the same with either heat."""
    write(tmp_path, {
        "test_helpers.py": HELPERS,
        "train.py": """
            from test_helpers import read_loss
            for x in loader:
                loss = model(x).sum()
                loss.backward()
                read_loss(loss)
        """,
    })
    assert findings(tmp_path) == []
    assert analysed_again == []
    assert findings(tmp_path, include_tests=True) == [("test_helpers.py", "VP201", 3, "LOW", "step")]
    assert analysed_again == ["test_helpers.py"]


REPORT_AND_TRAIN = """
    def report(model, x):
        print(model(x.cuda()).sum().item())

    def main(loader, optimizer, model):
        for x in loader:
            model(x.cuda()).sum().backward()
            optimizer.step()
            report(model, x)
"""

REPORT_ONCE = """
    def report(model, x):
        print(model(x.cuda()).sum().item())

    def main(model, x):
        report(model, x)
"""


def test_two_scripts_with_one_module_name_never_share_heat(tmp_path):
    # Two example folders, each with its own `main.py`: `main.report` is two functions.
    write(tmp_path, {"trains/main.py": REPORT_AND_TRAIN, "reports/main.py": REPORT_ONCE})
    result = analyze_paths([str(tmp_path)], Settings(select=("VP201",)))
    assert [(f.path.split("/")[-2], f.line, f.severity.name, f.heat.label) for f in result.findings] == [
        ("trains", 3, "MEDIUM", "step"),
    ]


def test_a_script_folder_imports_the_package_beside_it(tmp_path):
    # `python -m scripts.train` from the project root: `scripts/` has no `__init__.py`, yet
    # `from pkg.metrics import read_loss` names pkg/metrics.py, the only module of that name.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/metrics.py": HELPERS,
        "scripts/train.py": """
            from pkg.metrics import read_loss
            for x in loader:
                loss = model(x).sum()
                loss.backward()
                read_loss(loss)
        """,
    })
    assert findings(tmp_path) == [("metrics.py", "VP201", 3, "LOW", "step")]


NOT_ANALYSED_AGAIN = {
    # `summary.py` names no device, so its read waits for a caller's module: `train.py` names one
    # and lends it, but calls the read once after the loop, where VP201 never reports.
    "lent-a-device-read-after-the-loop": ("VP2", {
        "summary.py": """
            def final_loss(loss):
                return loss.item()
        """,
        "train.py": """
            import torch
            from summary import final_loss

            def main(loader, model, optimizer):
                for x in loader:
                    loss = model(x.to("cuda")).sum()
                    loss.backward()
                    optimizer.step()
                final_loss(loss)
        """,
    }),
    # VP201 decides a read in a module that names no device on one input only: whether a caller's
    # module lends it one. A training loop that names none either changes its heat, not that.
    "host-read-from-a-host-training-loop": ("VP2", {
        "metrics.py": """
            def read_loss(loss):
                return loss.item()
        """,
        "train.py": """
            from metrics import read_loss

            def main(loader, model, optimizer):
                for x in loader:
                    loss = model(x).sum()
                    loss.backward()
                    optimizer.step()
                    print(read_loss(loss))
        """,
    }),
    # VP402 reads, outside loops, only whether the function runs every step: a helper that turns
    # from run-once into eval code is judged the same (what it is handed is not known here: a
    # tensor handed in would be a fact of its own, which may change a finding).
    "history-kept-by-a-helper-an-eval-loop-calls": ("VP402", {
        "helpers.py": """
            import torch

            history = []

            def remember(outputs):
                history.append(outputs.detach())
        """,
        "evaluate.py": """
            import torch
            from helpers import remember

            @torch.no_grad()
            def evaluate(model, loader):
                model.eval()
                for x in loader:
                    remember(predict(model, x))
        """,
    }),
}


@pytest.mark.parametrize(("select", "files"), NOT_ANALYSED_AGAIN.values(), ids=NOT_ANALYSED_AGAIN)
def test_not_analysed_again_where_no_decision_could_change(tmp_path, analysed_again, select, files):
    write(tmp_path, files)
    assert findings(tmp_path, (select,)) == []
    assert analysed_again == []


def test_a_read_an_environment_step_consumes_is_low_in_a_module_lent_its_device(tmp_path):
    """The same read is LOW whether its module names the device or a caller's module lends it."""
    write(tmp_path, {
        "policy.py": """
            import torch

            def act(envs, q_network, obs):
                q_values = q_network(obs)
                actions = torch.argmax(q_values, dim=1).cpu().numpy()
                next_obs, rewards, terminations, truncations, infos = envs.step(actions)
                return next_obs
        """,
        "train.py": """
            import torch
            from policy import act

            device = torch.device("cuda")

            def train(envs, q_network, optimizer, obs, total_steps):
                for global_step in range(total_steps):
                    obs = act(envs, q_network, torch.as_tensor(obs, device=device))
                    loss = q_network(obs).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        """,
    })
    assert findings(tmp_path) == [("policy.py", "VP201", 6, "LOW", "step")]


def test_a_module_that_only_forwards_a_call_passes_the_heat_on(tmp_path):
    # relay.py names no token any rule needs, but its function is on the step's call path.
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/relay.py": """
            from pkg.ops import wait_for_device

            def relay(x):
                return wait_for_device(x)
        """,
        "pkg/ops.py": """
            import torch

            def wait_for_device(x):
                torch.cuda.synchronize()
                return x
        """,
        "train.py": """
            import torch
            from pkg.relay import relay

            def train(model, loader, optimizer):
                for x, y in loader:
                    loss = model(x, y)
                    loss.backward()
                    optimizer.step()
                    relay(loss)
        """,
    })
    assert findings(tmp_path, select=("VP203",)) == [("ops.py", "VP203", 5, "HIGH", "step")]
