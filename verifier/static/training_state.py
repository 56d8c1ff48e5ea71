"""Grad mode, graph-carrying names and evaluation mode, followed once per module.

Rules about autograd memory (VP401, VP402) and evaluation loops (VP404) read the same
walk-order state: one `TrainingState` tracker feeds an `AutogradTracker` and an `EvalTracker`
from the engine's single walk, and each of those rules reads it through `TrainingStateRule`.
"""

from __future__ import annotations

import libcst as cst

from verifier.static.autograd import AutogradTracker
from verifier.static.evaluation import EvalTracker
from verifier.static.rule import Rule
from verifier.static.tracker import Tracker


class TrainingState(Tracker):
    def __init__(self, context) -> None:
        super().__init__(context)
        self.autograd = AutogradTracker(context.imports, context.facts)
        self.evaluation = EvalTracker(context.path, context.imports, context.facts)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.autograd.enter_class(node)
        self.evaluation.enter_class()

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.autograd.leave_class()
        self.evaluation.leave_class()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.autograd.enter_function(node)
        self.evaluation.enter_function(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.autograd.leave_function()
        self.evaluation.leave_function()

    def visit_With(self, node: cst.With) -> None:
        self.autograd.enter_with(node)

    def leave_With(self, node: cst.With) -> None:
        self.autograd.leave_with()

    def visit_Expr(self, node: cst.Expr) -> None:
        self.autograd.on_statement(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.autograd.on_call(node)
        self.evaluation.on_call(node, self.context.heat.where().loops)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.autograd.bind(target.target, node.value)
            if type(target.target) is cst.Attribute and target.target.attr.value == "requires_grad":
                self.evaluation.note_grad_use(self.context.heat.where().loops)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.autograd.bind(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.autograd.bind_in_place(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self.autograd.bind(node.target, None)

    def leave_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.autograd.bind(node.asname.name, None)


class TrainingStateRule(Rule):
    """A rule that reads the module's `TrainingState`: `self.autograd` and `self.evaluation`."""

    def __init__(self, context) -> None:
        super().__init__(context)
        state = context.tracker(TrainingState)
        self.autograd = state.autograd
        self.evaluation = state.evaluation

    def training_loop_predicate(self):
        """A judge for after the walk: is this loop a training step loop, not a loop inside one?

        The heat model calls any innermost loop that runs a model a step loop; an RNN's time loop
        inside one training step is one too. Graphs kept across *its* iterations are freed by the
        step's single backward, so memory rules ask for a loop that iterates data or trains.
        """
        training = self.evaluation.training_loops()

        def is_training_step(loop) -> bool:
            return loop.data_source or id(loop) in training or (loop.is_step and not loop.trains) or loop.is_epoch

        return is_training_step
