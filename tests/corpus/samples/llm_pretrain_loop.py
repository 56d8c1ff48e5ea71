"""GPT-style pretraining script: an endless loop of optimizer steps, each made of gradient
accumulation micro-steps over a memory-mapped token file, with periodic evaluation."""

import os
import time

import numpy as np
import torch
import torch.nn.functional as F

device_type = "cuda" if torch.cuda.is_available() else "cpu"
device = torch.device(device_type)
synchronize = torch.cuda.synchronize if device_type == "cuda" else lambda: None


class TokenShards:
    """A hand-written loader: contiguous windows of a token file, on the host."""

    def __init__(self, path, batch_size, block_size):
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        self.B, self.T = batch_size, block_size
        self.position = 0

    def next_batch(self):
        span = self.B * self.T + 1
        window = torch.from_numpy(self.tokens[self.position : self.position + span].astype(np.int64))
        self.position = (self.position + span) % (len(self.tokens) - span)
        return window[:-1].view(self.B, self.T), window[1:].view(self.B, self.T)

    def tokens_per_step(self):
        return self.B * self.T  # `self.T` is a sequence length, not a transpose


def get_batch(data, batch_size, block_size):
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in ix])  # expect: VP101[LOW]
    return x.to(device)  # expect: VP102[LOW]


@torch.no_grad()
def estimate_loss(model, data, eval_iters=20):
    model.eval()
    losses = torch.zeros(eval_iters, device=device)
    for k in range(eval_iters):
        x = get_batch(data, 8, 256)
        logits = model(x)
        losses[k] = F.cross_entropy(logits[:, :-1].flatten(0, 1), x[:, 1:].flatten())
    model.train()
    return losses.mean().item()


def train(model, optimizer, data_dir, max_steps, grad_accum_steps=8, eval_interval=250):
    loader = TokenShards(os.path.join(data_dir, "train.bin"), 16, 1024)
    val_data = np.memmap(os.path.join(data_dir, "val.bin"), dtype=np.uint16, mode="r")
    timings = []
    step, smoothed = 0, 0.0
    while True:
        if step % eval_interval == 0:
            print(f"step {step}: val loss {estimate_loss(model, val_data):.4f}")
        if step == max_steps:
            break
        synchronize()  # expect: VP203[LOW]
        t0 = time.time()
        for micro_step in range(grad_accum_steps):
            x, y = loader.next_batch()
            x, y = x.to(device), y.to(device)  # expect: VP102[LOW]
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                logits = model(x)
                loss = F.cross_entropy(logits.flatten(0, 1), y.flatten()) / grad_accum_steps
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item() * grad_accum_steps  # expect: VP201[MEDIUM]
        smoothed = 0.9 * smoothed + 0.1 * loss.item() * grad_accum_steps  # expect: VP202[LOW]
        synchronize()  # expect: VP203[LOW]
        dt = time.time() - t0
        print(f"step {step} | loss {lossf:.4f} | norm {norm:.3f} | {dt * 1000:.1f} ms")  # expect: VP201[MEDIUM]
        if step > max_steps - 20:
            timings.append(dt)
        if step < 3:
            print(f"first steps: loss {loss.item():.4f}")
        step += 1
    return sum(timings) / max(len(timings), 1), loader.tokens_per_step()
