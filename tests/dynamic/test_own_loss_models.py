"""Users' models as they are: models that compute their own loss (nanoGPT's `(logits, loss)`,
Hugging Face's `labels=` and `.loss`), with embeddings, tied weights and buffers, run unwrapped."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from verifier.dynamic.batch_loss import LossNotFound, call_model, loss_from
from verifier.dynamic.entry import ComponentsRun, EntryError, EntryWorkload
from verifier.dynamic.harness import HarnessOptions, run_harness
from verifier.dynamic.memory import measured_split
from verifier.dynamic.results import MemorySplit

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = {"warmup": 2, "steps": 2, "repeats": 2, "max_repeats": 2, "sync_steps": 1, "accuracy_seeds": 2,
        "device": "cpu", "modes": ("fp32", "bf16"), "time_budget_s": 300}


@pytest.fixture(scope="module", params=["gpt_with_targets", "lm_with_labels"])
def own_loss_run(request):
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(Path(__file__).parent / "fixtures"))
        return request.param, run_harness(HarnessOptions(entry=f"own_loss_models:{request.param}", threads=1, **FAST))


def test_a_model_that_computes_its_own_loss_trains_in_every_mode(own_loss_run):
    _, result = own_loss_run
    assert [(m.mode, m.error) for m in result.modes] == [("fp32", None), ("bf16", None)]
    for mode in result.modes:
        assert mode.step_time.median_ms > 0 and mode.tokens_per_second > 0
        assert [run.seed for run in mode.accuracy_runs] == [0, 1]
        # Counting is learned in 30 steps through the model's own loss: far above chance (1/16).
        assert all(run.error is None and run.accuracy > 0.5 for run in mode.accuracy_runs)
        assert all(run.train_loss_last < 0.5 * run.train_loss_first for run in mode.accuracy_runs)
    assert result.method.notes[0].startswith("same starting weights in every mode: verified")


def test_embeddings_tied_weights_and_buffers_get_a_memory_split(own_loss_run):
    _, result = own_loss_run
    for mode in result.modes:
        assert isinstance(mode.memory_split, MemorySplit), mode.memory_split_note
        assert mode.memory_split.estimated and mode.memory_split.activations_other_bytes > 0


@pytest.mark.parametrize(("entry", "model_class"), [("gpt_with_targets", "SmallGPT"), ("lm_with_labels", "SmallCausalLM")])
def test_tied_weights_count_once_and_buffers_with_the_parameters(entry_fixtures, entry, model_class):
    import own_loss_models

    model = getattr(own_loss_models, model_class)()
    tensors = [*model.parameters(), *model.buffers()]  # parameters() yields a tied weight once
    expected = sum(t.numel() * t.element_size() for t in tensors)
    assert len(list(model.parameters())) < len(model.state_dict())  # the tie is real
    estimate = EntryWorkload(f"own_loss_models:{entry}", getattr(own_loss_models, entry)).estimate_memory("fp32")
    assert isinstance(estimate, MemorySplit) and estimate.parameters_bytes == expected
    optimizer = torch.optim.AdamW(model.parameters())
    assert measured_split(10 * expected, model, optimizer).parameters_bytes == expected


def test_a_named_forward_spells_the_call_out(entry_fixtures):
    import own_loss_models

    run = ComponentsRun(own_loss_models.gpt_with_named_forward(torch.device("cpu")), "fp32", torch.device("cpu"))
    losses = [run.step() for _ in range(3)]
    assert all(loss.shape == () and loss.requires_grad is False for loss in losses)
    loss, accuracy = run.evaluate()
    assert loss > 0 and 0.0 <= accuracy <= 1.0


def test_a_model_without_its_labels_fails_with_what_it_returned(entry_fixtures):
    result = run_harness(HarnessOptions(entry="own_loss_models:lm_without_labels", threads=1, **FAST))
    said = (
        "the model's output holds no loss: its loss is None (were labels or targets passed?); "
        "name a forward that returns it, or a loss_fn"
    )
    assert [m.error for m in result.modes] == [said, said]
    assert result.failure.startswith("every mode failed: fp32: the model's output holds no loss")


def test_one_way_to_compute_the_loss(entry_fixtures):
    import own_loss_models

    def both(device):
        parts = own_loss_models.gpt_with_targets(device)
        return {**parts, "loss_fn": torch.nn.functional.cross_entropy, "forward": lambda model, batch: model(*batch)}

    with pytest.raises(EntryError, match="names loss_fn and forward: give one way to compute the loss"):
        EntryWorkload("x:both", both).open("fp32", torch.device("cpu"), 0)

    def dict_batches_with_loss_fn(device):
        return {**own_loss_models.lm_with_labels(device), "loss_fn": torch.nn.functional.cross_entropy}

    run = EntryWorkload("x:dicts", dict_batches_with_loss_fn).open("fp32", torch.device("cpu"), 0)
    with pytest.raises(EntryError, match=r"^with loss_fn a batch must be \(inputs, targets\), got a dict: "):
        run.step()


def test_the_loss_is_found_in_every_shape_of_output():
    loss, logits = torch.tensor(2.5), torch.zeros(2, 3)

    class WithLoss:
        def __init__(self, value):
            self.loss, self.logits = value, logits

    assert loss_from(loss) is loss
    assert loss_from((logits, loss)) is loss and loss_from([loss, logits]) is loss
    assert loss_from({"loss": loss, "logits": logits}) is loss
    assert loss_from(WithLoss(loss)) is loss
    with pytest.raises(LossNotFound, match=r"^the model returned a tuple of 2 with 2 scalar floating tensors: "):
        loss_from((loss, loss))
    with pytest.raises(LossNotFound, match=r"^the model's output holds no loss: its loss is None \(were labels"):
        loss_from(WithLoss(None))
    with pytest.raises(LossNotFound, match=r"^the model's output is not a scalar floating loss tensor \(\(2, 3\)\)"):
        loss_from(logits)
    with pytest.raises(LossNotFound, match=r"^the model's output holds no loss: a str; "):
        loss_from("oops")


def test_the_batch_is_spread_into_the_call():
    seen = []

    class Recorder(torch.nn.Module):
        def forward(self, *args, **kwargs):
            seen.append((args, kwargs))

    call_model(Recorder(), (1, 2))
    call_model(Recorder(), {"input_ids": 1, "labels": 2})
    call_model(Recorder(), 3)
    assert seen == [((1, 2), {}), ((), {"input_ids": 1, "labels": 2}), ((3,), {})]
