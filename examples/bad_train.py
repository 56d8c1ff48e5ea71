"""A character-level language model trained with FP16 AMP: a realistic script with the
performance and correctness mistakes verify-perf exists to catch. Its corrected twin is
good_train.py. (This file is analysed, never run, by the tests.)"""

import time

import torch
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

device = "cuda"
block_size, batch_size, max_steps, eval_every = 128, 64, 5000, 500

text = open("input.txt", encoding="utf-8").read()
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)


def get_batch():
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


class CharModel(torch.nn.Module):
    def __init__(self, vocab_size, width=256):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, width)
        self.mix = torch.nn.GRU(width, width, batch_first=True)
        self.head = torch.nn.Linear(width, vocab_size)

    def forward(self, x):
        hidden, _ = self.mix(self.embed(x))
        return self.head(hidden)


def loss_value(loss):
    return loss.item()


model = CharModel(len(vocab)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
scaler = torch.amp.GradScaler("cuda")

for step in range(max_steps):
    x, y = get_batch()
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    scaler.scale(loss).backward()
    norm = clip_grad_norm_(model.parameters(), 1.0)
    if torch.isfinite(norm):
        scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    history = loss_value(loss)
    if loss.item() < 1.0:
        print(f"step {step}: loss {loss.item():.4f}")
    torch.cuda.synchronize()

print("final loss", loss.item())


def finetune_head(loader, head_optimizer):
    head_scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        head_scaler.scale(loss).backward()
        head_optimizer.step()
        head_scaler.update()
        head_optimizer.zero_grad(set_to_none=True)


def warmup(loader, warmup_optimizer, epochs=2):
    warmup_scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            loss.backward()
            warmup_scaler.step(warmup_optimizer)
            warmup_optimizer.zero_grad(set_to_none=True)
        warmup_scaler.update()


def benchmark_forward(iters=50):
    x, _ = get_batch()
    timings = []
    for _ in range(iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        model(x)
        torch.cuda.synchronize()
        timings.append(time.perf_counter() - start)
    return sorted(timings)[len(timings) // 2]
