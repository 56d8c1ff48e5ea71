"""The corrected twin of bad_train.py: the same character-level model trained with FP16 AMP,
written the way verify-perf recommends. (Analysed, never run, by the tests.)"""

import torch
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

device = "cuda"
block_size, batch_size, max_steps, log_every = 128, 64, 5000, 500

text = open("input.txt", encoding="utf-8").read()
vocab = sorted(set(text))
data = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)
offsets = torch.arange(block_size)


def get_batch():
    ix = torch.randint(len(data) - block_size - 1, (batch_size, 1))
    x = data[ix + offsets]
    y = data[ix + 1 + offsets]
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


class CharModel(torch.nn.Module):
    def __init__(self, vocab_size, width=256):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, width)
        self.mix = torch.nn.GRU(width, width, batch_first=True)
        self.head = torch.nn.Linear(width, vocab_size)

    def forward(self, x):
        hidden, _ = self.mix(self.embed(x))
        return self.head(hidden)


model = CharModel(len(vocab)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
scaler = torch.amp.GradScaler("cuda")
running_loss = torch.zeros((), device=device)

for step in range(max_steps):
    x, y = get_batch()
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    running_loss += loss.detach()

print("mean loss", running_loss.item() / max_steps)


def finetune_head(loader, head_optimizer):
    head_scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        head_scaler.scale(loss).backward()
        head_scaler.step(head_optimizer)
        head_scaler.update()
        head_optimizer.zero_grad(set_to_none=True)


def warmup(loader, warmup_optimizer, epochs=2):
    warmup_scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            warmup_scaler.scale(loss).backward()
            warmup_scaler.step(warmup_optimizer)
            warmup_scaler.update()
            warmup_optimizer.zero_grad(set_to_none=True)


def benchmark_forward(iters=50):
    x, _ = get_batch()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        model(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters
