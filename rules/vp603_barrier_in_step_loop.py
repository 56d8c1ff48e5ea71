"""VP603 barrier-in-step-loop: every rank waits for every other rank on every step."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.distributed import is_barrier
from verifier.static.guards import GuardedRule, is_opt_in_flag
from verifier.static.rule import Invalid, Proof


# What a barrier costs depends on how the run is launched, which the code does not show: on one
# process it returns at once; with NCCL the host waits for the device's queue and the slowest rank.
_LAUNCH_DECIDES = Proof.assumed(
    Premise.COST,
    "a barrier waits for every rank (with NCCL, for the device's queue too) when the run is distributed; "
    "on one process it returns at once, and gradient collectives already keep ranks in step",
)


class BarrierInStepLoop(GuardedRule):
    code = "VP603"
    name = "barrier-in-step-loop"
    category = Category.DISTRIBUTED
    # Once per epoch (before a checkpoint or an evaluation) a barrier is the normal thing to do.
    # MEDIUM: what it costs depends on the launch, which the code never proves (`_LAUNCH_DECIDES`).
    severity = SeverityByHeat(step=Severity.MEDIUM, epoch=None, once=None, eval=None)
    cost = "a barrier: every rank waits for the slowest one"
    summary = (
        "Finds `torch.distributed.barrier()` (and `accelerator.wait_for_everyone()`, `fabric.barrier()`) "
        "that runs on every training step."
    )
    why = (
        "A barrier blocks the host until every rank has reached it; with the NCCL backend it also waits "
        "for the device work queued so far. Every step then runs at the pace of the slowest rank with no "
        "overlap between host and device, which is what `torch.cuda.synchronize()` costs, times the "
        "straggler spread. DDP and FSDP already keep ranks in step through their gradient collectives."
    )
    example = """\
for x, y in loader:
    loss = criterion(ddp_model(x), y)
    loss.backward()
    optimizer.step()
    dist.barrier()
"""
    use_instead = """\
for step, (x, y) in enumerate(loader):
    loss = criterion(ddp_model(x), y)
    loss.backward()
    optimizer.step()
    if step % save_every == 0:
        dist.barrier()  # only where ranks must agree, e.g. around a checkpoint
        save_checkpoint(ddp_model, step)
"""
    fix = "Remove the per-step barrier; keep one only around work that needs every rank (checkpoints, evaluation)."
    tokens = ("barrier", "wait_for_everyone")
    references = (
        "https://pytorch.org/docs/stable/distributed.html#torch.distributed.barrier",
        "https://pytorch.org/docs/stable/notes/ddp.html",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._flags: list[bool] = []

    def visit_If(self, node: cst.If) -> None:
        self._flags.append(is_opt_in_flag(node.test))

    def leave_If(self, node: cst.If) -> None:
        self._flags.pop()

    def visit_Call(self, node: cst.Call) -> None:
        # Every N steps, or behind a debugging switch (`if args.sync_ranks:`), is a choice.
        if is_barrier(node, self.context.imports) and not self.guarded and not any(self._flags):
            self.report(
                node, "a barrier {loop} makes every rank wait for the slowest one {often}", evidence=(_LAUNCH_DECIDES,)
            )

    VALID = (
        """\
import torch.distributed as dist
for epoch in range(epochs):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    dist.barrier()
    save_checkpoint(model, epoch)
""",
        """\
import torch.distributed as dist
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    if step % args.save_every == 0:
        dist.barrier()
        save_checkpoint(model, step)
""",
        """\
for batch in train_dataloader:
    with accelerator.accumulate(model):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
accelerator.wait_for_everyone()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.distributed as dist
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    dist.barrier()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
        Invalid(
            """\
for batch in train_dataloader:
    outputs = model(**batch)
    accelerator.backward(outputs.loss)
    optimizer.step()
    optimizer.zero_grad()
    accelerator.wait_for_everyone()
""",
            line=6,
            severity=Severity.MEDIUM,
        ),
    )
