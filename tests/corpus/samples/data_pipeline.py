"""Data loading for a character-level language model and a retrieval model."""

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

device = "cuda"


class TokenWindows(Dataset):
    def __init__(self, tokens: np.ndarray, block: int):
        self.data = torch.from_numpy(tokens.astype(np.int64))
        self.block = block

    def __len__(self):
        return len(self.data) - self.block - 1

    def __getitem__(self, i):
        chunk = self.data[i : i + self.block + 1]
        return chunk[:-1], chunk[1:]


def collate_padded(samples, pad_id=0):
    longest = max(len(s["input_ids"]) for s in samples)
    ids = torch.full((len(samples), longest), pad_id, dtype=torch.long)
    for row, sample in enumerate(samples):
        ids[row, : len(sample["input_ids"])] = torch.as_tensor(sample["input_ids"])
    labels = torch.stack([torch.as_tensor(s["label"]) for s in samples])
    return {"input_ids": ids, "attention_mask": ids.ne(pad_id), "labels": labels}


def make_loaders(train_set, val_set, batch_size, workers, loader_kwargs=None):
    train_loader = DataLoader(
        train_set, batch_size=batch_size, shuffle=True, collate_fn=collate_padded,
        num_workers=workers, pin_memory=True, persistent_workers=workers > 0, drop_last=True,
    )
    val_loader = DataLoader(val_set, batch_size=2 * batch_size, collate_fn=collate_padded, num_workers=0)  # expect: VP103[LOW]
    test_loader = DataLoader(val_set, collate_fn=collate_padded, **(loader_kwargs or {}))
    return train_loader, val_loader, test_loader


def random_batch(data, block, batch_size):
    ix = torch.randint(len(data) - block - 1, (batch_size,))
    x = torch.stack([data[i : i + block] for i in ix])  # expect: VP101[LOW]  (`data` is a parameter: not shown to be one tensor)
    y = torch.stack([data[i + 1 : i + 1 + block] for i in ix])  # expect: VP101[LOW]
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


def train_char_model(model, data, optimizer, max_steps=5000, block=256, batch_size=32):
    for step in range(max_steps):
        x, y = random_batch(data, block, batch_size)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def train_classifier(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}  # expect: VP102[LOW]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(batch["input_ids"], attention_mask=batch["attention_mask"])
                loss = criterion(logits, batch["labels"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def train_with_hard_negatives(model, features, loader, optimizer, epochs, mine_hard, class_counts):
    for epoch in range(epochs):
        hard = mine_hard(model, features)
        # `features` is not shown to be one tensor (a list of per-sample tensors has no single gather): no VP101
        negatives = torch.cat([features[i] for i in hard]).to(device, non_blocking=True)
        weights = torch.tensor(1.0 / np.maximum(class_counts(epoch), 1)).to(device)  # expect: VP104[LOW]
        for anchors, positives, labels in loader:
            anchors = anchors.to(device, non_blocking=True)
            positives = positives.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model.contrastive_loss(anchors, positives, negatives, weights[labels.to(device, non_blocking=True)])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
