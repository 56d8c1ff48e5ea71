"""VP105: counting a DataLoader by running it, at each heat, and what is not a DataLoader."""

from __future__ import annotations

SELECT = ("VP105",)


def test_translation_script_counts_train_and_validation_loaders_every_epoch(analyse):
    code = """\
    import torch

    def train_epoch(model, train_dl, loss_fn, optim):
        model.train()
        losses = 0
        for src, tgt in train_dl:
            logits = model(src.to(device), tgt.to(device))
            loss = loss_fn(logits, tgt.to(device))
            optim.zero_grad()
            loss.backward()
            optim.step()
            losses += loss.detach()
        return losses / len(list(train_dl))

    def validate(model, valid_dl, loss_fn):
        model.eval()
        losses = 0
        with torch.no_grad():
            for src, tgt in valid_dl:
                losses += loss_fn(model(src.to(device), tgt.to(device)), tgt.to(device))
        return losses / len(list(valid_dl))

    def main(model, train_dl, valid_dl, loss_fn, optim, epochs):
        for epoch in range(epochs):
            train_epoch(model, train_dl, loss_fn, optim)
            validate(model, valid_dl, loss_fn)
    """
    assert analyse(code, select=SELECT) == [("VP105", 13, "MEDIUM"), ("VP105", 21, "MEDIUM")]


def test_counting_inside_the_step_loop_runs_a_whole_epoch_per_step(analyse):
    code = """\
    import torch
    for batch_idx, (x, y) in enumerate(train_loader):
        loss = criterion(model(x.cuda()), y.cuda()) / accumulation
        loss.backward()
        if (batch_idx + 1) % accumulation == 0 or batch_idx + 1 == len(list(train_loader)):
            optimizer.step()
            optimizer.zero_grad()
    """
    assert analyse(code, select=SELECT) == [("VP105", 5, "HIGH")]


def test_every_counting_shape_on_a_constructed_loader(analyse):
    code = """\
    from torch.utils.data import DataLoader
    stream = DataLoader(shards, batch_size=8)
    a = len(list(stream))
    b = len(tuple(iter(stream)))
    c = len([batch for batch in stream])
    d = sum(1 for _ in enumerate(stream))
    e = sum([1 for _ in stream])
    """
    assert analyse(code, select=SELECT) == [
        ("VP105", 3, "LOW"), ("VP105", 4, "LOW"), ("VP105", 5, "LOW"), ("VP105", 6, "LOW"), ("VP105", 7, "LOW"),
    ]


def test_len_of_the_loader_and_counting_other_iterables_stay_quiet(analyse):
    code = """\
    import torch
    from torch.utils.data import DataLoader
    batches_per_epoch = len(train_loader)
    samples = len(train_loader.dataset)
    indices = len(list(train_loader.batch_sampler))
    params = len(list(model.parameters()))
    trainable = sum(1 for p in model.parameters() if p.requires_grad)
    files = len(list(data_dir.iterdir()))
    items = len(list(dataset))
    weighted = sum(2 for _ in train_loader)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    """
    assert analyse(code, select=SELECT) == []


def test_a_name_bound_to_something_else_is_not_a_loader_by_its_name(analyse):
    code = """\
    import torch
    loader_names = ["train", "val"]
    count = len(list(loader_names))
    """
    assert analyse(code, select=SELECT) == []
