"""Evaluation context: code that runs a model for inference (after `model.eval()` or in a
function named like `validate`/`evaluate`/`test`), learned in walk order per function.

`model.eval()` only switches dropout and batch-norm behaviour; autograd still records a graph
unless grad mode is off. Rules ask `reason()` (why this code evaluates), `grad_use()` (whether
this loop or function needs gradients anyway: attacks, saliency, test-time training) and
`training_loops()` (loops that run backward() or step an optimizer).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import libcst as cst

from verifier.static.facts import NameFacts
from verifier.static.names import ImportTable, dotted_name, is_false, method_name, positional_arg, receiver
from verifier.static.walk import iter_descendants

_EVAL_WORDS = frozenset(
    {"validate", "validation", "valid", "val", "evaluate", "evaluation", "eval", "evaluating",
     "validating", "test", "testing", "inference", "infer", "predict", "prediction"}
)
_GRAD_CALLS = frozenset({"backward", "manual_backward", "requires_grad_"})
_GRAD_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional.jacobian"})
_TEST_FILE = re.compile(r"(^test_.*|.*_test)\.py$")


@dataclass(eq=False)
class _Frame:
    name: str | None
    named_for_eval: bool = False
    is_test: bool = False
    eval_call: str | None = None
    evaluated: set[str] = field(default_factory=set)
    # Loops (by id) with a gradient use or an optimizer step anywhere inside, and uses outside loops.
    grad_loops: set[int] = field(default_factory=set)
    grad_outside_loops: bool = False


class EvalTracker:
    def __init__(self, path: str, imports: ImportTable, facts: NameFacts) -> None:
        self._imports = imports
        self._facts = facts
        self._test_file = bool(_TEST_FILE.match(os.path.basename(path)))
        self._frames: list[_Frame] = [_Frame(name=None)]
        self._class_depths: list[int] = []

    def enter_class(self) -> None:
        self._class_depths.append(len(self._frames))

    def leave_class(self) -> None:
        self._class_depths.pop()

    def enter_function(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        in_class = bool(self._class_depths) and self._class_depths[-1] == len(self._frames)
        bare = name.lower().strip("_")
        # unittest methods and pytest functions (and their `_test_*` helpers) test, they do not evaluate.
        is_test = bare.startswith("test") and (in_class or self._test_file)
        words = set(bare.split("_"))
        self._frames.append(_Frame(name, named_for_eval=not is_test and bool(words & _EVAL_WORDS), is_test=is_test))

    def leave_function(self) -> None:
        self._frames.pop()

    def on_call(self, call: cst.Call, loops: tuple) -> None:
        frame = self._frames[-1]
        method = method_name(call)
        owner = receiver(call)
        if method in _GRAD_CALLS or self._imports.call_name(call) in _GRAD_FUNCTIONS:
            if method != "requires_grad_" or not is_false(_flag(call)):
                self.note_grad_use(loops)
            return
        if method == "step" and (self._facts.is_optimizer(owner) or self._facts.is_scaler(owner)):
            self.note_grad_use(loops)
            return
        if owner is None or type(owner) in (cst.SimpleString, cst.FormattedString):
            return
        if method == "eval" and not call.args:
            if not _is_loop_variable(owner, loops):
                self._enter_eval(frame, owner)
        elif method == "train":
            if is_false(_flag(call)):
                self._enter_eval(frame, owner)
            else:
                frame.eval_call, frame.evaluated = None, set()

    def note_grad_use(self, loops: tuple) -> None:
        """Gradients are needed (or an optimizer steps) here: in every loop around this point, or the body."""
        frame = self._frames[-1]
        if not loops:
            frame.grad_outside_loops = True
        frame.grad_loops.update(id(loop) for loop in loops)

    def _enter_eval(self, frame: _Frame, owner: cst.BaseExpression) -> None:
        name = dotted_name(owner)
        frame.eval_call = f"{name or 'module'}.eval()"
        if name:
            frame.evaluated.add(name)

    def reason(self) -> str | None:
        """Why the code here is evaluation, in words; None when it is not known to be."""
        frame = self._frames[-1]
        if frame.is_test:
            return None
        if frame.eval_call:
            return f"after `{frame.eval_call}`"
        if frame.named_for_eval:
            return f"in `{frame.name}()`"
        return None

    def evaluates(self, call: cst.Call) -> bool:
        """A call of a module this function put in eval mode."""
        name = dotted_name(call.func)
        return name is not None and name in self._frames[-1].evaluated

    def training_loops(self) -> set[int]:
        """Ids of this function's loops that run backward() or an optimizer step (filled as the walk goes)."""
        return self._frames[-1].grad_loops

    def grad_use(self):
        """A judge for after the walk: does this loop (or, in a function, its body) need gradients?"""
        frame = self._frames[-1]
        in_function = frame.name is not None

        def uses_grad(loop: object | None) -> bool:
            if in_function and frame.grad_outside_loops:
                return True
            return loop is not None and id(loop) in frame.grad_loops

        return uses_grad


def _flag(call: cst.Call) -> cst.BaseExpression | None:
    arg = positional_arg(call, 0)
    if arg is None:
        for candidate in call.args:
            if candidate.keyword is not None and candidate.keyword.value in {"mode", "requires_grad"}:
                return candidate.value
        return None
    return arg.value


def _is_loop_variable(owner: cst.BaseExpression, loops: tuple) -> bool:
    """`for m in model.modules(): m.eval()` freezes submodules (batch norm), it does not evaluate."""
    innermost = loops[-1].node if loops else None
    if type(innermost) is not cst.For or type(owner) is not cst.Name:
        return False
    bound = (innermost.target, *iter_descendants(innermost.target))
    return any(type(n) is cst.Name and n.value == owner.value for n in bound)
