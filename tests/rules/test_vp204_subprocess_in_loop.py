"""VP204: process launches by qualified name, nvidia-smi named in the message, periodic calls LOW."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

LOOP = "import torch\nfor x in loader:\n    model(x).sum().backward()\n"


def test_aliases_are_found_and_lookalikes_are_not(analyse):
    code = (
        "from subprocess import check_output as co\nimport os as operating_system\n"
        + LOOP
        + "    co(['nvidia-smi'])\n    operating_system.popen('nvidia-smi')\n    run(['nvidia-smi'])\n"
        + "    self.system('ls')\n"
    )
    assert analyse(code, select=("VP204",)) == [("VP204", 6, "HIGH"), ("VP204", 7, "HIGH")]


def test_nvidia_smi_points_to_nvml(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import subprocess\n" + LOOP + "    subprocess.run('nvidia-smi --query-gpu=utilization.gpu', shell=True)\n    subprocess.run(['sync'])\n")
    first, second = analyze_paths([str(path)], Settings(select=("VP204",))).findings
    assert "`nvidia-smi`" in first.message and "pynvml" in first.fix
    assert "pynvml" not in second.fix


def test_without_torch_only_nvidia_smi_is_reported(analyse):
    code = "import subprocess\nfor x in loader:\n    model(x).sum().backward()\n    subprocess.run(['nvidia-smi'])\n    subprocess.run(['sync'])\n"
    assert analyse(code, select=("VP204",)) == [("VP204", 4, "HIGH")]


def test_the_else_branch_of_a_periodic_test_runs_every_step(analyse):
    code = "import subprocess\n" + LOOP + textwrap.indent(
        "if step % 50 == 0:\n    subprocess.run(['nvidia-smi'])\nelse:\n    subprocess.run(['true'])\n", "    "
    )
    assert analyse(code, select=("VP204",)) == [("VP204", 6, "LOW"), ("VP204", 8, "HIGH")]


def test_a_helper_called_only_every_n_steps_is_periodic(analyse):
    code = """\
    import subprocess
    import torch

    def gpu_memory():
        return subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])

    def per_step():
        return subprocess.check_output(["nvidia-smi"])

    for step, (x, y) in enumerate(loader):
        model(x).sum().backward()
        per_step()
        if step % 100 == 0:
            print(gpu_memory())
    """
    assert analyse(code, select=("VP204",)) == [("VP204", 5, "LOW"), ("VP204", 8, "HIGH")]


def test_a_spawn_under_a_test_of_the_data_is_not_reported(analyse):
    # How often the branch runs is not known (a file missing, an upload option): on real code
    # every such finding was wrong, so VP204 says nothing rather than LOW.
    code = """\
    import subprocess
    import torch

    for step, batch in enumerate(loader):
        loss = model(batch.cuda()).mean()
        loss.backward()
        optimizer.step()
        if not os.path.isfile(cache_path):
            subprocess.run(["bash", "fetch.sh"])
        subprocess.run(["nvidia-smi"])
    """
    assert analyse(code, select=("VP204",)) == [("VP204", 10, "HIGH")]
