"""Values keep what is known of them through tuple unpacking (`logits, loss = model(X, Y)`)."""

from __future__ import annotations

SELECT = ("VP201", "VP202", "VP401", "VP402")

NANOGPT_STEP = """\
import torch
device = "cuda"
model = GPT(config)
model.to(device)
history = []
for iter_num in range(max_iters):
    logits, loss = model(X, Y)
    loss.backward()
    optimizer.step()
    {probe}
"""


def test_every_everyday_read_of_an_unpacked_loss_is_found(analyse):
    for probe, code in [
        ("value = float(loss)", "VP201"),
        ("if loss > 100:\n        pass", "VP201"),
        ("value = loss.item()", "VP201"),
        ("history.append(loss)", "VP402"),
    ]:
        found = analyse(NANOGPT_STEP.format(probe=probe), select=SELECT)
        assert [(c, line) for c, line, _ in found] == [(code, 10)], probe


def test_the_parts_a_loss_helper_returns_after_the_loss_are_not_taken_for_tensors(analyse):
    code = """\
    import torch
    device = "cuda"
    model.to(device)
    for x, y in loader:
        loss, parts = compute_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        if parts:
            print(parts)
    """
    assert analyse(code, select=SELECT) == []


def test_a_function_that_sets_a_loss_up_returns_configuration_not_tensors(analyse):
    code = """\
    import torch

    class Recipe:
        def setup(self, cfg):
            self.hidden, self.curriculum = self._setup_early_exit_loss(cfg)

        def train(self, loader):
            for batch in loader:
                loss = self.model(batch.to("cuda")).sum()
                loss.backward()
                self.optimizer.step()
                if self.curriculum:
                    self.curriculum.step()
    """
    assert analyse(code, select=SELECT) == []


def test_a_private_helper_named_for_what_it_does_to_a_model_returns_no_outputs(analyse):
    # `_rewrite_model(model)` rewrites a model; its results are modules and lists, not a forward's
    # outputs, and testing one for emptiness reads nothing from the device.
    code = """\
    import torch

    class Pipeline:
        def _rewire(self, batch):
            self._pipelined, self._model = _rewrite_model(self._model, batch)

        def progress(self, loader):
            for batch in loader:
                if not self._pipelined:
                    self._rewire(batch)
                loss = self._model(batch.to("cuda")).sum()
                loss.backward()
                self.optimizer.step()
    """
    assert analyse(code, select=SELECT) == []
    # A plain model-named call still returns a forward's outputs.
    assert analyse(code.replace("_rewrite_model(", "self.pipeline_model("), select=SELECT) == [("VP201", 9, "MEDIUM")]


def test_a_numpy_copy_of_a_device_tensor_is_a_read(analyse):
    code = NANOGPT_STEP.format(probe="values = np.asarray(loss.detach())").replace(
        "import torch\n", "import numpy as np\nimport torch\n"
    )
    assert analyse(code, select=SELECT) == [("VP201", 11, "MEDIUM")]


BACKWARD_OPERANDS = """\
import torch

def train(loader, compute, accelerator):
    model.cuda()
    for x, y in loader:
        loss, parts = compute(model, x.cuda(), y.cuda())
        loss.backward()
        optimizer.step()
        print(f"{loss:.3f}")
        other = compute(model, x.cuda(), y.cuda())
        accelerator.backward(other)
        if other > 1:
            pass
        third = compute(model, x.cuda(), y.cuda())
        scaler.scale(third / 4).backward()
        float(third)
        print(f"{parts}")
"""


def test_what_a_backward_runs_on_is_a_tensor_whatever_made_it(analyse):
    # The first element of an unknown function's result, an `accelerator.backward` operand and a
    # scaled loss: each a tensor after its backward; `parts` (never backpropagated) stays unknown.
    assert analyse(BACKWARD_OPERANDS, select=("VP201",)) == [
        ("VP201", 9, "MEDIUM"),
        ("VP201", 12, "MEDIUM"),
        ("VP201", 16, "MEDIUM"),
    ]


def test_an_argument_a_local_function_runs_backward_on_is_a_tensor(analyse):
    # timm's shape: `_backward(_loss)` runs `_loss.backward()`; what the step hands it is a tensor.
    code = """\
    import torch

    def train_one_epoch(model, loader, task):
        model.cuda()
        for input, target in loader:
            def _forward():
                result = task(input.cuda(), target.cuda())
                return result["loss"], result

            def _backward(_loss):
                _loss.backward(create_graph=False)
                optimizer.step()

            loss, result = _forward()
            _backward(loss)
            print(f"{loss}")
            print(f"{result}")
    """
    assert analyse(code, select=("VP201",)) == [("VP201", 16, "MEDIUM")]


def test_a_key_looked_up_in_model_outputs_is_no_tensor_read(analyse):
    code = """\
    import torch

    def criterion(outputs, targets):
        if "aux_outputs" in outputs:
            return outputs["aux_outputs"]
        return outputs

    model.cuda()
    for x, y in loader:
        outputs = model(x.cuda())
        loss = criterion(outputs, y)
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP201", "VP205")) == []


def test_a_value_put_in_a_dict_literal_is_found_again_by_its_key(analyse):
    code = """\
    import torch
    model = Net().cuda()
    for x, y in loader:
        out = {"loss": criterion(model(x.cuda()), y.cuda()), "count": 3}
        loss = out["loss"]
        loss.backward()
        optimizer.step()
        value = loss.item()
        count = float(out["count"])
        out = {"loss": 1.0}
        again = float(out["loss"])
    """
    # `out["count"]` is a Python number; once `out` is rebound its old keys are forgotten.
    assert analyse(code, select=SELECT) == [("VP201", 8, "MEDIUM")]


def test_an_item_assigned_by_key_keeps_its_facts(analyse):
    code = """\
    import torch
    model = Net().cuda()
    metrics = {}
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        metrics["loss"] = loss
        print(f"{metrics['loss']:.3f}")
    """
    assert analyse(code, select=SELECT) == [("VP201", 9, "MEDIUM")]


def test_a_name_handed_to_a_backward_later_is_a_tensor_before_the_backward_too(analyse):
    code = """\
    import torch
    device = "cuda"
    for step, batch in enumerate(loader):
        out, loss = engine.run(batch.to(device))
        print(f"loss {loss:.3f}")
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    found = analyse(code, select=SELECT)
    assert [(c, line, severity) for c, line, severity in found] == [("VP201", 5, "MEDIUM")]


def test_what_a_name_is_bound_to_still_wins_over_a_later_backward(analyse):
    code = """\
    import torch
    device = "cuda"
    for step, batch in enumerate(loader):
        loss = 0.0
        print(f"loss {loss:.3f}")
        loss = engine.run(batch.to(device))
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=SELECT) == []


def test_a_lightning_training_step_returns_the_loss_the_framework_backpropagates(analyse):
    code = """\
    import lightning as L

    class LitModel(L.LightningModule):
        def training_step(self, batch, batch_idx):
            out = self.net.run(batch)
            print(f"loss {out:.3f}")
            return {"loss": out}

    trainer = L.Trainer(accelerator="cuda")
    """
    found = analyse(code, select=SELECT)
    assert [(c, line) for c, line, _ in found] == [("VP201", 6)]
