"""VP604 data-parallel-module: `nn.DataParallel` instead of DistributedDataParallel."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.accelerator_branches import AcceleratorBranches
from verifier.static.distributed import data_parallel_kind
from verifier.static.names import keyword_arg, positional_arg
from verifier.static.rule import Invalid, Rule

# The wrap runs once but costs on every forward and backward; a module that trains pays it
# every step (MEDIUM), an inference or evaluation script pays it per batch (LOW).
_TRAINING = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.MEDIUM, once=Severity.MEDIUM, eval=Severity.LOW)
_INFERENCE = SeverityByHeat.always(Severity.LOW)
# `data_parallel(module, inputs)` replicates on the call itself: its own heat decides.
_PER_CALL = SeverityByHeat(step=Severity.MEDIUM, epoch=Severity.LOW, once=Severity.LOW, eval=Severity.LOW)


class DataParallelModule(Rule):
    code = "VP604"
    name = "data-parallel-module"
    category = Category.DISTRIBUTED
    severity = _TRAINING
    cost = "`nn.DataParallel`: one process scatters the inputs and gathers the outputs every step"
    summary = "Finds `torch.nn.DataParallel` (and `nn.parallel.data_parallel`) used to spread a model over GPUs."
    why = (
        "DataParallel runs every GPU from one Python process: each forward copies the parameters from "
        "the first GPU to the others, scatters the batch, runs one thread per GPU under the GIL, gathers "
        "the outputs on the first GPU and reduces the gradients there. The first GPU holds more memory "
        "than the others and the GIL caps the speed-up; PyTorch recommends DistributedDataParallel (one "
        "process per GPU, gradients all-reduced while backward runs) even on a single machine."
    )
    example = """\
model = torch.nn.DataParallel(model).cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
"""
    use_instead = """\
# torchrun --nproc_per_node=NUM_GPUS train.py
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = DistributedDataParallel(model.cuda(local_rank), device_ids=[local_rank])
loader = DataLoader(dataset, batch_size=per_gpu_batch, sampler=DistributedSampler(dataset))
"""
    fix = "Launch one process per GPU with torchrun and wrap the model in `DistributedDataParallel`."
    tokens = ("DataParallel", "data_parallel")
    references = (
        "https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html",
        "https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel",
        "https://pytorch.org/tutorials/intermediate/ddp_tutorial.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._branches = context.tracker(AcceleratorBranches)

    def visit_Call(self, node: cst.Call) -> None:
        kind = data_parallel_kind(node, self.context.imports)
        if kind is None or self._branches.host_only:
            return  # a CPU fallback's wrap (`else:` of `torch.cuda.is_available()`) replicates nothing
        if kind == "function":
            self.report(
                node,
                "`data_parallel(...)` replicates the module to every GPU on each call, from one process",
                severity=_PER_CALL,
            )
            return
        if _one_device(node):
            return  # `DataParallel(m, device_ids=[0])` calls the module: nothing is replicated
        trains = self.context.mentions_in_code("backward(")
        self.report(
            node,
            "`DataParallel` drives every GPU from one process: parameters are re-broadcast and outputs "
            "gathered on one GPU on every forward" + (", and gradients reduced there on every backward" if trains else ""),
            severity=_TRAINING if trains else _INFERENCE,
        )

    VALID = (
        # The CPU fallback: without CUDA, DataParallel calls the module and replicates nothing.
        """\
import torch

if torch.cuda.is_available():
    model = DistributedDataParallel(Net().cuda())
else:
    model = torch.nn.DataParallel(Net())
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
""",
        """\
import torch

model = torch.nn.DataParallel(Net().cuda(), device_ids=[0])
for x, y in loader:
    criterion(model(x.cuda()), y.cuda()).backward()
    optimizer.step()
""",
        """\
import os
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
model = DDP(model.cuda(local_rank), device_ids=[local_rank])
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
        """\
import torch

# The attribute is not the class: nothing is wrapped here.
uses_data_parallel = isinstance(model, torch.nn.DataParallel)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch

model = torch.nn.DataParallel(model).cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    optimizer.step()
""",
            line=3,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
from torch import nn

model = nn.DataParallel(model, device_ids=list(range(num_gpu))).cuda().eval()
with torch.no_grad():
    for images in loader:
        predictions.append(model(images.cuda()).argmax(-1))
""",
            line=3,
            severity=Severity.LOW,
        ),
        # The CUDA side of the same test wraps for real.
        Invalid(
            """\
import torch

if not torch.cuda.is_available():
    model = torch.nn.DataParallel(Net())
else:
    model = torch.nn.DataParallel(Net()).cuda()
for x, y in loader:
    criterion(model(x), y).backward()
    optimizer.step()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
    )


def _one_device(call: cst.Call) -> bool:
    """`device_ids=[0]` (or `[args.gpu]`): a one-element list, so DataParallel runs the module as is."""
    devices = keyword_arg(call, "device_ids") or positional_arg(call, 1)
    return devices is not None and type(devices.value) is cst.List and len(devices.value.elements) == 1 and not any(
        type(element) is cst.StarredElement for element in devices.value.elements
    )
