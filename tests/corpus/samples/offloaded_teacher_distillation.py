"""Distillation with a large teacher swapped onto the device for each step, fed by generators.

The teacher is moved in and out of device memory every step, the token batches come from a
generator that copies them with blocking calls, and the held-out loader collates on the device.
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = torch.device("cuda")


def pad_examples(samples):
    ids = torch.nn.utils.rnn.pad_sequence([s["ids"] for s in samples], batch_first=True)
    labels = torch.stack([s["label"] for s in samples])
    return ids.to(device), labels.to(device)  # expect: VP106[LOW]


def endless(loader):
    while True:
        for ids, labels in loader:
            yield ids.cuda(), labels.cuda()  # expect: VP106[LOW]


def pinned_stream(loader):
    for ids, labels in loader:
        yield ids.to(device, non_blocking=True), labels.to(device, non_blocking=True)


def distill(student, teacher_model, batches, optimizer, steps):
    for step in range(steps):
        ids, labels = next(batches)
        teacher_model.to(device)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            soft_targets = teacher_model(ids).softmax(-1)
        teacher_model.to("cpu")  # expect: VP407[HIGH]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = student(ids)
            loss = F.kl_div(logits.log_softmax(-1), soft_targets, reduction="batchmean")
            loss = loss + F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()


def federated_rounds(local_model, server, loader, optimizer):
    for ids, labels in pinned_stream(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(local_model(ids), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        server.push([p.grad for p in local_model.cpu().parameters()])  # expect: VP407[HIGH]
        local_model = server.pull().cuda()


@torch.no_grad()
def held_out_accuracy(student, eval_loader):
    student.eval()
    correct = torch.zeros((), device=device)
    for ids, labels in eval_loader:
        correct += (student(ids).argmax(-1) == labels).sum()
    return correct


def main(student, teacher_model, server, train_set, eval_set, steps=10_000):
    train_loader = DataLoader(
        train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True, persistent_workers=True
    )
    eval_loader = DataLoader(eval_set, batch_size=64, collate_fn=pad_examples)  # expect: VP103[LOW]
    student = student.to(device)
    optimizer = torch.optim.AdamW(student.parameters(), lr=3e-4, fused=True)
    batches = endless(train_loader)
    distill(student, teacher_model, batches, optimizer, steps)
    federated_rounds(student, server, train_loader, optimizer)
    return held_out_accuracy(student, eval_loader)
