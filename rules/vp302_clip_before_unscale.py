"""VP302 clip-before-unscale: clipping gradients that are still multiplied by the loss scale."""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Premise, Severity, SeverityByHeat
from verifier.static.names import dotted_name, terminal_name
from verifier.static.rule import Invalid, Proof
from verifier.static.scaler import AmpScope, AmpScopeRule, calls_before_clip, scaler_proof, unscaling_functions


class ClipBeforeUnscale(AmpScopeRule):
    code = "VP302"
    name = "clip-before-unscale"
    category = Category.AMP
    severity = SeverityByHeat.always(Severity.HIGH)
    cost = "clipping against gradients still multiplied by the loss scale"
    summary = "Finds `clip_grad_norm_`/`clip_grad_value_` called before `scaler.unscale_(optimizer)` where a GradScaler is used."
    why = (
        "Until `unscale_` runs, gradients are multiplied by the loss scale (65536 at start). A "
        "max-norm of 1.0 then clips against a norm thousands of times too large, so clipping either "
        "does nothing useful or crushes every update, and the clip threshold silently depends on "
        "the current scale."
    )
    example = """\
scaler.scale(loss).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
"""
    use_instead = """\
scaler.scale(loss).backward()
scaler.unscale_(optimizer)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
"""
    fix = "Call `scaler.unscale_(optimizer)` before clipping; `scaler.step` then does not unscale twice."
    references = ("https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping",)

    premises = (Premise.VALUE, Premise.RULE)

    def leave_Module(self, node: cst.Module) -> None:
        self._unscalers = unscaling_functions(self._amp.closed)
        self._defined = {scope.name for scope in self._amp.closed if scope.name}
        super().leave_Module(node)

    def check(self, scope: AmpScope) -> None:
        if not (scope.scales_loss or scope.steps_with_scaler):
            return
        for call, where, unscaled_before, condition in scope.clips:
            if unscaled_before or id(call) in scope.exempt:
                continue
            before = calls_before_clip(scope, call)
            if any(terminal_name(c.func) in self._unscalers for c in before):
                continue  # a function of this module called first unscales (`self.unscale_gradients()`)
            self.report(
                call,
                "gradients are clipped while still multiplied by the loss scale; "
                "call `scaler.unscale_(optimizer)` first",
                where=where,
                condition=condition,
                evidence=(scaler_proof(scope), self._nothing_unscales(before)),
            )

    def _nothing_unscales(self, before: list[cst.Call]) -> Proof:
        """The rule's premise: no `unscale_` reaches the clip, on any path, through calls included.
        A call to code this module does not hold (an inherited method, another module's function
        given the optimizer or the scaler) might unscale: then it is only assumed."""
        facts = self.context.facts
        for call in before:
            func = call.func
            inherited = (
                type(func) is cst.Attribute and dotted_name(func.value) == "self" and func.attr.value not in self._defined
            )
            given = any(facts.is_optimizer(arg.value) or facts.is_scaler(arg.value) for arg in call.args)
            foreign = not (self.context.imports.call_name(call) or "").startswith("torch.")
            if inherited or (given and foreign and terminal_name(func) not in self._defined):
                return Proof.assumed(
                    Premise.RULE,
                    f"no `unscale_` is called before the clip here, but `{self.context.code_for(func)}(...)` "
                    "runs first and is not followed",
                    call,
                )
        return Proof.proven(
            Premise.RULE, "no `scaler.unscale_` runs before the clip in this function or the functions it calls first"
        )

    VALID = (
        """\
import torch
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
        """\
import torch
for x, y in loader:
    criterion(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
""",
        """\
import torch

class Trainer:
    def unscale_gradients(self):
        self.scaler.unscale_(self.optimizer)

    def clip(self, parameters, max_norm):
        self.unscale_gradients()
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def step(self, loss):
        self.scaler.scale(loss).backward()
        self.clip(self.model.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
""",
    )
    INVALID = (
        Invalid(
            """\
from torch.nn.utils import clip_grad_norm_
for x, y in loader:
    scaler.scale(criterion(model(x), y)).backward()
    clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
""",
            line=4,
            severity=Severity.HIGH,
        ),
        Invalid(
            """\
import torch
from base import BaseTrainer

class Trainer(BaseTrainer):
    def step(self, loss):
        self.scaler.scale(loss).backward()
        self.prepare_gradients()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
""",
            line=8,
            severity=Severity.MEDIUM,
        ),
    )
