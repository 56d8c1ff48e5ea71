"""Grad mode, graph-carrying names and evaluation context, as the autograd rules see them."""

from __future__ import annotations

import textwrap

import libcst as cst

from verifier.config import Settings
from verifier.static.autograd import GradMode
from verifier.static.engine import analyze_source
from verifier.static.source import decode_source
from verifier.static.training_state import TrainingStateRule


def probe(code: str, path: str = "train.py") -> dict[str, tuple[GradMode, bool, str | None]]:
    """At every `mark("label", expr)`: grad mode, whether `expr` carries a graph, the eval reason."""
    seen: dict[str, tuple[GradMode, bool, str | None]] = {}

    class Probe(TrainingStateRule):
        code = "VP000"
        tokens = ("mark",)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "mark":
                label = node.args[0].value.evaluated_value
                graph = self.autograd.carries_graph(node.args[1].value)
                seen[label] = (self.autograd.grad_mode(), graph, self.evaluation.reason())

    analyze_source(path, decode_source(textwrap.dedent(code).encode()), [Probe], Settings())
    return seen


def test_grad_mode_from_contexts_decorators_and_statements():
    seen = probe(
        """
        import torch
        from torch import no_grad

        mark("module", 0)
        with torch.no_grad():
            mark("no_grad", 0)
            with torch.enable_grad():
                mark("enable_grad", 0)
        with no_grad(), torch.autocast("cuda"):
            mark("aliased", 0)
        with torch.inference_mode(False):
            mark("inference_off", 0)
        with torch.set_grad_enabled(is_training):
            mark("flag", 0)

        @torch.inference_mode()
        def predict():
            mark("decorated", 0)

        def later():
            torch.set_grad_enabled(False)
            mark("statement", 0)

        def plain():
            mark("plain", 0)
        """
    )
    modes = {label: mode for label, (mode, _, _) in seen.items()}
    assert modes == {
        "module": GradMode.ENABLED,
        "no_grad": GradMode.DISABLED,
        "enable_grad": GradMode.ENABLED,
        "aliased": GradMode.DISABLED,
        "inference_off": GradMode.ENABLED,
        "flag": GradMode.UNKNOWN,
        "decorated": GradMode.DISABLED,
        "statement": GradMode.DISABLED,
        "plain": GradMode.ENABLED,
    }


def test_graph_carrying_values_and_what_cuts_the_graph():
    seen = probe(
        """
        import torch
        import torch.nn.functional as F

        for x, y in loader:
            out = model(x)
            loss = criterion(out, y)
            scaled = scaler.scale(loss)
            mean = F.cross_entropy(out, y).mean()
            hf_loss = model(**batch).loss
            detached = loss.detach()
            value = loss.item()
            unknown = helper(x)
            with torch.no_grad():
                frozen = model(x)
            mark("out", out)
            mark("loss", loss)
            mark("scaled", scaled)
            mark("functional", mean)
            mark("attribute", hf_loss)
            mark("weighted", loss * x.size(0))
            mark("detached", detached)
            mark("item", value)
            mark("float", float(loss))
            mark("data", loss.data)
            mark("argmax", out.argmax(-1))
            mark("unknown", unknown)
            mark("no_grad", frozen)
            mark("criterion_of_detached", criterion(out.detach(), y))
        """
    )
    graphs = {label: graph for label, (_, graph, _) in seen.items()}
    assert graphs == {
        "out": True, "loss": True, "scaled": True, "functional": True, "attribute": True,
        "weighted": True, "detached": False, "item": False, "float": False, "data": False,
        "argmax": False, "unknown": False, "no_grad": False, "criterion_of_detached": False,
    }


def test_lightning_eval_hooks_run_without_grad_and_test_functions_are_not_evaluation():
    seen = probe(
        """
        class Lit:
            def validation_step(self, batch, index):
                mark("hook", 0)

            def test_forward(self):
                model.eval()
                mark("unittest", 0)

        def validate(model):
            mark("named", 0)
            model.train()
            mark("named_still", 0)

        def run(model):
            model.eval()
            mark("after_eval", 0)
            model.train()
            mark("after_train", 0)
        """
    )
    assert seen["hook"][0] is GradMode.DISABLED
    reasons = {label: reason for label, (_, _, reason) in seen.items()}
    assert reasons["unittest"] is None
    assert reasons["named"] == "in `validate()`"
    assert reasons["after_eval"] == "after `model.eval()`"
    assert reasons["after_train"] is None


def test_no_grad_entered_on_an_exit_stack_covers_the_evaluation_loop(analyse):
    code = """\
    import torch
    from contextlib import ExitStack


    def evaluate(model, loader):
        with ExitStack() as stack:
            model.eval()
            stack.enter_context(torch.no_grad())
            for inputs in loader:
                outputs = model(inputs.cuda())
    """
    assert analyse(code, select=("VP404",)) == []
