"""VP106: blocking copies in batch producers take the heat of their consumer, and never
duplicate VP102 (copies whose own line is hot) or VP104 (factory tensors)."""

from __future__ import annotations

SELECT = ("VP102", "VP104", "VP106")


def test_a_token_packing_generator_drawn_from_every_micro_step(analyse):
    code = """\
    import torch

    def packed_batches(split):
        while True:
            rows, masks = pack_rows(split)
            batch = torch.tensor(rows, dtype=torch.long, pin_memory=True)
            inputs = batch[:, :-1].to(device, non_blocking=True)
            targets = batch[:, 1:].to(device, non_blocking=True)
            mask = torch.tensor(masks, dtype=torch.int8)
            keep = mask[:, 1:].to(device=device)
            yield inputs, targets, keep

    train_batches = packed_batches("train")
    while True:
        for micro_step in range(accumulation):
            x, y, keep = next(train_batches)
            loss = model(x, y, keep) / accumulation
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    """
    assert analyse(code, select=SELECT) == [("VP106", 10, "LOW")]


def test_a_method_generator_iterated_by_the_training_loop(analyse):
    code = """\
    import torch

    class Trainer:
        def batches(self):
            for images, labels in self.train_loader:
                yield images.cuda(), labels.cuda()

        def fit(self):
            for images, labels in self.batches():
                loss = self.criterion(self.model(images), labels)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
    """
    assert analyse(code, select=SELECT) == [("VP106", 6, "LOW")]


def test_a_generator_that_wraps_another_generator_passes_its_heat_down(analyse):
    code = """\
    import torch

    def shards(loader):
        for x, y in loader:
            yield x.to(device), y.to(device)

    def forever(loader):
        while True:
            yield from shards(loader)

    stream = forever(train_loader)
    for step in range(max_steps):
        x, y = next(stream)
        criterion(model(x), y).backward()
        optimizer.step()
    """
    assert analyse(code, select=SELECT) == [("VP106", 5, "LOW")]


def test_a_collate_function_on_the_device_runs_per_batch_of_its_loader(analyse):
    code = """\
    import functools
    import torch
    from torch.utils.data import DataLoader

    def collate(samples, pad_id):
        ids = torch.nn.utils.rnn.pad_sequence([s[0] for s in samples], batch_first=True, padding_value=pad_id)
        return ids.to(device), torch.tensor([s[1] for s in samples]).to(device)

    train_loader = DataLoader(corpus, batch_size=16, num_workers=2, pin_memory=True, persistent_workers=True,
                              collate_fn=functools.partial(collate, pad_id=0))
    for epoch in range(5):
        for ids, labels in train_loader:
            criterion(model(ids), labels).backward()
            optimizer.step()
    """
    # The factory tensor in the same statement is VP104's kind of copy, not a batch: one finding.
    assert analyse(code, select=SELECT) == [("VP106", 7, "LOW")]


def test_copies_whose_own_line_is_hot_stay_with_vp102(analyse):
    code = """\
    import torch
    data = torch.tensor(tokens, dtype=torch.long)

    def get_batch(ix):
        x = torch.stack([data[i : i + 64] for i in ix])
        return x.to(device)

    def batches(loader):
        for x, _ in loader:
            yield x.to(device)

    for step in range(max_steps):
        x = get_batch(torch.randint(100, (8,)))
        model(x).sum().backward()
        for y in batches(train_loader):
            model(y).sum().backward()
        optimizer.step()
    """
    assert analyse(code, select=SELECT) == [("VP102", 6, "LOW"), ("VP102", 10, "LOW")]


def test_producers_drawn_once_pinned_or_of_unknown_data_stay_quiet(analyse):
    code = """\
    import torch

    def batches(loader):
        for x, y in loader:
            yield x.to(device), y.to(device)

    def pinned(loader):
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    def from_params(tensors):
        for t in tensors:
            yield t.to(device)

    first = next(batches(train_loader))
    for x, y in pinned(train_loader):
        criterion(model(x), y).backward()
        optimizer.step()
    for t in from_params(buffers):
        model(t).sum().backward()
        optimizer.step()
    """
    assert analyse(code, select=SELECT) == []
