"""VP204 subprocess-in-loop: starting a process (often `nvidia-smi`) inside the training loop.

Matches `subprocess.run/call/check_call/check_output/Popen/getoutput/getstatusoutput`,
`os.system` and `os.popen` by qualified name. Inside `if step % N == 0:` the call runs once per N
steps and is reported LOW, as is a helper whose every call in this module is such a periodic
call (`if step % 100 == 0: log(gpu_memory())`). Loops that are neither step nor epoch loops (a
script walking over files) are not reported: spawning processes there is ordinary scripting.
Nor is a module that does not import torch, unless the command is `nvidia-smi`: a test-bisection
`while iteration <= max_iter:` loop reads like a step loop to the heat model but trains nothing.
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.heat import Where
from verifier.static.names import local_callee_name
from verifier.static.guards import guarded_calls
from verifier.static.rule import Invalid, Rule
from verifier.static.walk import iter_descendants

_SPAWNS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
     "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen"}
)
_PERIODIC = SeverityByHeat(step=Severity.LOW, epoch=Severity.LOW, once=None)
_NVML_FIX = (
    "Query the GPU in-process: `pynvml` (package `nvidia-ml-py`: `nvmlDeviceGetMemoryInfo`, "
    "`nvmlDeviceGetUtilizationRates`) or `torch.cuda.memory_allocated()` / `torch.cuda.mem_get_info()`, "
    "and only every N steps."
)


class SubprocessInLoop(Rule):
    code = "VP204"
    name = "subprocess-in-loop"
    category = Category.GPU
    # On the judged real code every finding under a branch that depends on the data was wrong
    # (download, unzip and retry helpers, an upload behind an option; docs/rule-precision.md):
    # those are not reported. Per step, proven, it finds every injected spawn.
    reports_unknown: ClassVar[bool] = False
    severity = SeverityByHeat(step=Severity.HIGH, epoch=Severity.MEDIUM, once=None)
    cost = "a new process started and waited for"
    tokens = ("subprocess", "system", "popen")
    summary = (
        "Finds `subprocess.*` / `os.system` / `os.popen` calls (typically `nvidia-smi`) inside "
        "step or epoch loops."
    )
    why = (
        "Every call forks and execs a new process, and `nvidia-smi` then initialises NVML and "
        "queries the driver before it prints. The training process waits for all of it and "
        "queues no GPU work meanwhile, on every step. The same facts are available in-process "
        "through NVML (`pynvml`) or the `torch.cuda` memory APIs, without a process start."
    )
    example = """\
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    used = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])
"""
    use_instead = """\
import pynvml

pynvml.nvmlInit()
gpu = pynvml.nvmlDeviceGetHandleByIndex(0)
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    if step % 100 == 0:
        used = pynvml.nvmlDeviceGetMemoryInfo(gpu).used
"""
    fix = "Move the command out of the loop, or run it every N steps; for GPU facts use NVML in-process."
    references = (
        "https://pypi.org/project/nvidia-ml-py/",
        "https://pytorch.org/docs/stable/generated/torch.cuda.mem_get_info.html",
        "https://pytorch.org/docs/stable/torch_cuda_memory.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._periodic: set[int] = set()
        self._functions: list[str] = []
        # Whether each call of a module function by name (`helper()`, `self.helper()`) is periodic.
        self._calls_by_name: dict[str, list[bool]] = {}
        self._spawns: list[tuple[cst.Call, str, bool, Where, str | None]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node.name.value)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.pop()

    def visit_If(self, node: cst.If) -> None:
        self._periodic |= guarded_calls(node, self.context.imports)

    def visit_Call(self, node: cst.Call) -> None:
        callee = local_callee_name(node.func)
        if callee is not None:
            self._calls_by_name.setdefault(callee, []).append(id(node) in self._periodic)
        qualified = self.context.imports.call_name(node)
        if qualified not in _SPAWNS:
            return
        nvidia_smi = _runs_nvidia_smi(node)
        if not nvidia_smi and not self.context.imports.imports_module("torch"):
            return
        where = self.context.heat.here()
        # A helper that only spawns, called every N steps: the helper's own lines are not periodic.
        helper = self._functions[-1] if self._functions and not where.loops else None
        self._spawns.append(
            (node, "`nvidia-smi`" if nvidia_smi else f"`{qualified}`", nvidia_smi, where, self.context.condition_probe(), helper)
        )

    def leave_Module(self, node: cst.Module) -> None:
        for call, what, nvidia_smi, where, condition, helper in self._spawns:
            fix = _NVML_FIX if nvidia_smi else None
            callers = self._calls_by_name.get(helper or "", [])
            if id(call) in self._periodic or (callers and all(callers)):
                self.report(
                    call, f"{what} starts a process every N steps of the loop", where=where, condition=condition,
                    severity=_PERIODIC, fix=fix,
                )
            else:
                self.report(
                    call, f"{what} starts a process on every iteration; the loop waits for it", where=where,
                    condition=condition, fix=fix,
                )

    VALID = (
        """\
import subprocess
subprocess.run(["nvidia-smi"], check=True)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
""",
        """\
import subprocess
for path in checkpoints:
    subprocess.run(["gzip", path], check=True)
""",
        """\
import subprocess
iteration = 1
while iteration <= max_iter:
    subprocess.run([sys.executable, "-m", "test"])
    iteration += 1
""",
    )
    INVALID = (
        Invalid(
            """\
import subprocess
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    memory = subprocess.check_output(["nvidia-smi", "--query-gpu=memory.used", "--format=csv"])
""",
            line=5,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
from os import system
for epoch in range(epochs):
    for x, y in loader:
        model(x).sum().backward()
    system("nvidia-smi")
""",
            line=5,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
import subprocess as sp
for step, (x, y) in enumerate(loader):
    model(x).sum().backward()
    if step % 100 == 0:
        sp.run("nvidia-smi", shell=True)
""",
            line=5,
            severity=Severity.LOW,
        ),
    )


def _runs_nvidia_smi(call: cst.Call) -> bool:
    return any(
        type(node) is cst.SimpleString and "nvidia-smi" in node.value
        for arg in call.args
        for node in (arg.value, *iter_descendants(arg.value))
    )
