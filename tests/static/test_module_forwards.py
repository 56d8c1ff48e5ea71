"""A model's forward runs as often as the step that calls the model: through `model(x)`,
`self(x)` in a Lightning module, and submodules kept on `self` (`self.encoder(x)`). Loops over
the layers inside a forward are parts of one forward, not evaluation batches."""

from __future__ import annotations

NESTED_MODULES = """\
import torch
import torch.nn as nn


class Inner(nn.Module):
    def forward(self, x):
        {probe}
        return x


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x)


model = Outer()
model.cuda()
for x in loader:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
"""


def test_a_submodule_kept_on_self_runs_its_forward_every_step(analyse):
    found = analyse(NESTED_MODULES.format(probe="torch.cuda.synchronize()"), select=("VP203",))
    assert found == [("VP203", 7, "HIGH")]


LIGHTNING_MASKED_CONV = """\
import torch
import torch.nn as nn
import pytorch_lightning as pl


class MaskedConv(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x, lengths):
        for layer in self.layers:
            x = layer(x)
            mask = torch.BoolTensor(x.size()).fill_(0)
            if x.is_cuda:
                mask = mask.cuda()
            x = x.masked_fill(mask, 0)
        return x, lengths


class SpeechModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.conv = MaskedConv(nn.Sequential(nn.Conv2d(1, 32, 3)))

    def forward(self, x, lengths):
        x, _ = self.conv(x, lengths)
        return x

    def training_step(self, batch, batch_idx):
        inputs, targets, sizes = batch
        return self(inputs, sizes).sum()


trainer = pl.Trainer(accelerator="gpu")
"""


def test_a_mask_built_on_the_host_in_a_submodule_forward_is_copied_every_step(analyse):
    # `self(inputs)` runs `forward`, `self.conv(...)` the submodule's forward; the loop over its
    # layers is not an evaluation loop, and `x.is_cuda` does not change from step to step.
    found = analyse(LIGHTNING_MASKED_CONV, select=("VP104",))
    assert found == [("VP104", 16, "MEDIUM")]


def test_a_model_moved_compiled_and_wrapped_still_runs_its_forward(analyse):
    code = """\
    import torch
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP


    class Net(nn.Module):
        def forward(self, x):
            torch.cuda.synchronize()
            return x


    model = DDP(torch.compile(Net().cuda()), device_ids=[0])
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP203",)) == [("VP203", 8, "HIGH")]


CONFIGURED_HEAD = """\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x


class Plain(nn.Module):
    def forward(self, x):
        return x


class Model(nn.Module):
    def __init__(self, head):
        super().__init__()
        if head == "linear":
            self.head = nn.Linear(8, 8)
        elif head == "plain":
            self.head = Plain()
        else:
            self.head = Attention()

    def forward(self, x):
        return self.head(x)


model = Model("attention").cuda()
for x in loader:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
"""


def test_a_submodule_chosen_by_configuration_runs_whichever_class_was_built(analyse):
    # `__init__` picks the head by an option: a call through it may run each project class's forward.
    assert analyse(CONFIGURED_HEAD, select=("VP203",)) == [("VP203", 7, "HIGH")]


BASE_CLASS_FIT = """\
import torch
import torch.nn as nn


class BaseModel(nn.Module):
    def fit(self, loader, optimizer):
        model = self.train()
        for x, y in loader:
            loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


class Wide(BaseModel):
    def forward(self, x):
        bias = torch.zeros(x.shape[0], 1).to(x.device)
        return x.sum(1, keepdim=True) + bias
"""


def test_a_base_class_training_loop_runs_the_subclass_forward(analyse):
    # `self.train()` returns the instance, whose class may be any subclass: its forward runs per step.
    assert analyse(BASE_CLASS_FIT, select=("VP104",)) == [("VP104", 17, "MEDIUM")]


SCORING_MODEL = """\
import torch
import torch.nn as nn


class ScoringModel(nn.Module):
    def __init__(self, gamma, name):
        super().__init__()
        self.name = name
        self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
        self.width = nn.Parameter(torch.Tensor([self.gamma.item() / 8]), requires_grad=False)

    def forward(self, x):
        score = {"sum": self.by_sum, "norm": self.by_norm}
        return score[self.name](x)

    def by_sum(self, x):
        return self.gamma.item() - x.sum(dim=1)

    def by_norm(self, x):
        return self.width.item() * x.norm(dim=1)

    @staticmethod
    def train_step(model, optimizer, batch):
        optimizer.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()


def main(args, loader):
    scoring_model = ScoringModel(args.gamma, args.name)
    if args.cuda:
        scoring_model = scoring_model.cuda()
    optimizer = torch.optim.Adam(scoring_model.parameters())
    for step in range(args.steps):
        scoring_model.train_step(scoring_model, optimizer, next(loader))
"""


def test_a_parameter_read_in_a_method_the_forward_dispatches_to_is_read_every_step(analyse):
    # A parameter is a tensor (not a module: `nn.Parameter` is a class of `torch.nn`); a dict of
    # bound methods is a dispatch table whose entries the forward runs; a class named like a
    # model builds one, and `.cuda()` keeps the instance its calls go to. The read in
    # `__init__` runs once.
    assert analyse(SCORING_MODEL, select=("VP201",)) == [("VP201", 17, "MEDIUM"), ("VP201", 20, "MEDIUM")]
