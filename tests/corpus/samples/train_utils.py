"""Helpers shared by the training scripts in this folder (imported as `train_utils`)."""

import random
import subprocess

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def move_batch(inputs, targets, device):
    return inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)


def batch_accuracy(logits, targets) -> float:
    return (logits.argmax(-1) == targets).float().mean().item()  # expect: VP201[MEDIUM]


def gpu_memory_used_mb(index: int = 0) -> int:
    query = ["nvidia-smi", f"--id={index}", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
    return int(subprocess.check_output(query).decode().strip())  # expect: VP204


def log_scalars(writer, metrics: dict, step: int) -> None:
    for name, value in metrics.items():
        writer.add_scalar(name, value, step)


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def summarize(losses: list) -> dict:
    stacked = torch.tensor(losses)
    return {"mean": stacked.mean().item(), "std": stacked.std().item(), "last": losses[-1]}


def save_checkpoint(model, optimizer, epoch: int, path: str) -> None:
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
    torch.save(state, path)


def global_grad_norm(parameters) -> float:
    norms = [p.grad.detach().norm() for p in parameters if p.grad is not None]
    return torch.stack(norms).norm().item()  # expect: VP201[MEDIUM]
