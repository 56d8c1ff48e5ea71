"""VP404: what makes a loop an evaluation loop, and what turns autograd off for it."""

from __future__ import annotations

import pytest

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


MODEL_WITH_PROPAGATION = """\
import torch
from torch import nn


class LabelSmoothing(nn.Module):
    def __init__(self, n_items, dim, n_iter):
        super().__init__()
        self.embed = nn.Embedding(n_items, dim)
        self.softmax = nn.Softmax(dim=-1)
        self.n_iter = n_iter

    def forward(self, users, items):
        return self.embed(users) * self.embed(items)

    def label_smoothness_predict(self, labels, neighbours, weights):
        for _ in range(self.n_iter):
            scores = self.softmax(torch.mean(weights * neighbours, dim=-1))
            labels = (scores * labels).sum(dim=-1)
        return labels

    def calculate_loss(self, users, items, labels):
        labels = labels.float().to(self.device)
        return self.label_smoothness_predict(labels, self.embed(items), self.embed(users)).mean()
{outside}"""


def test_tensor_work_over_a_counter_in_a_model_method_is_not_an_evaluation(analyse):
    # A helper of the model's own loss, named like a prediction: its loop is part of one call of
    # the model's method, not a loop over evaluation batches.
    assert analyse(MODEL_WITH_PROPAGATION.format(outside=""), select=SELECT) == []


def test_the_same_loop_outside_a_model_class_is_still_an_evaluation_loop(analyse):
    outside = """\


softmax = nn.Softmax(dim=-1)


def label_smoothness_predict(labels, neighbours, weights, n_iter):
    for _ in range(n_iter):
        scores = softmax(torch.mean(weights * neighbours, dim=-1))
        labels = (scores * labels).sum(dim=-1)
    return labels
"""
    assert analyse(MODEL_WITH_PROPAGATION.format(outside=outside), select=SELECT) == [("VP404", 31, "MEDIUM")]


def test_a_model_method_over_a_data_loader_is_still_an_evaluation_loop(analyse):
    # Layer-wise inference: each layer over every batch of a loader, in a model's method.
    code = """\
    import torch
    from torch import nn

    device = torch.device("cuda")


    class GraphModel(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(width, width), nn.Linear(width, width)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

        def layerwise(self, features):
            for layer in self.layers:
                outputs = []
                for batch in node_loader:
                    x = features[batch.ids].to(device)
                    x = torch.relu(layer(x))
                    outputs.append(x.cpu())
                features = torch.cat(outputs)
            return features


    model = GraphModel(8).to(device)
    for batch in train_loader:
        loss = model(batch.x.to(device)).mean()
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP201",)) == [("VP201", 23, "LOW")]


def test_a_loop_calling_a_helper_named_for_what_it_does_to_a_model_is_no_evaluation(analyse):
    # Setup over submodule names: the helper rewrites each one; it runs no forward.
    code = """\
    import torch

    def enable_fast_eval(model, names):
        for name in names:
            module = model.get_submodule(name)
            turn_on_fused_eval_for_single_model(module)
            module = torch.fx.symbolic_trace(module)
    """
    assert analyse(code, select=SELECT) == []
    forward = code.replace("turn_on_fused_eval_for_single_model(module)", "outputs = model(module)")
    assert analyse(forward, select=SELECT) == [("VP404", 6, "MEDIUM")]


TARGET_ASSIGNER = """\
import torch
from torch import nn

device = torch.device("cuda")

class AssignTargets:
    def __init__(self, channels):
        self.head = nn.Linear(channels, 1)

    def __call__(self, preds, targets):
        matched = []
        for image in range({bound}):
            scores = self.head.forward(preds[image])
            best = scores.argmax()
            matched.append(best.item())
        return matched
"""


@pytest.mark.parametrize("bound", ["preds.shape[0]", "preds.size(0)"])
def test_a_loop_over_the_rows_of_a_tensor_in_hand_is_not_an_evaluation(analyse, bound):
    # One batch's images in a loss's target assignment: part of the call that holds the batch.
    # Nothing calls it here, so nothing says how often it runs.
    assert analyse(TARGET_ASSIGNER.format(bound=bound), select=("VP404", "VP201")) == []


def test_a_loop_over_a_datasets_length_is_still_an_evaluation(analyse):
    assert analyse(TARGET_ASSIGNER.format(bound="len(preds)"), select=("VP404", "VP201")) == [("VP201", 15, "LOW")]
