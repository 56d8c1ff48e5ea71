"""VP404: what makes a loop an evaluation loop, and what turns autograd off for it."""

from __future__ import annotations

SELECT = ("VP404",)


def test_one_finding_per_loop_at_the_first_model_call(analyse):
    code = """\
    import torch

    def evaluate(encoder, decoder, loader):
        encoder.eval()
        decoder.eval()
        for x, y in loader:
            memory = encoder(x)
            for t in range(y.size(1)):
                step_out = decoder(memory, y[:, :t])
    """
    assert analyse(code, select=SELECT) == [("VP404", 7, "MEDIUM")]


def test_lightning_hooks_and_unittest_methods_are_not_reported(analyse):
    code = """\
    import torch

    class Lit:
        def validation_step(self, batch, index):
            for t in range(10):
                self.decoder(batch)

    class TestModel:
        def test_eval(self):
            model.eval()
            for x in batches:
                model(x)
    """
    assert analyse(code, select=SELECT) == []


def test_pytest_file_test_functions_are_not_evaluation_loops(analyse):
    code = """\
    import torch

    def test_forward_in_eval_mode():
        model.eval()
        for x in batches:
            model(x)
    """
    assert analyse(code, name="test_model.py", select=SELECT) == []


def test_a_module_put_in_eval_mode_by_name_is_a_forward(analyse):
    code = """\
    import torch

    def calibrate(quantized, loader):
        quantized.eval()
        for x in loader:
            quantized(x)
    """
    assert analyse(code, select=SELECT) == [("VP404", 6, "MEDIUM")]
