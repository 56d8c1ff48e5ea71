"""Image classification on every visible GPU: the older single-process DataParallel path, an
FSDP2 variant with gradient accumulation, and a rank-0 metrics gather."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader


class TwoTower(nn.Module):
    def __init__(self, image_tower, text_tower, gpus):
        super().__init__()
        self.image_tower = image_tower
        self.text_tower = text_tower
        self.gpus = gpus

    def forward(self, images, tokens):
        if self.gpus > 1:
            image_features = nn.parallel.data_parallel(self.image_tower, images, range(self.gpus))  # expect: VP604[LOW]
        else:
            image_features = self.image_tower(images)
        return image_features @ self.text_tower(tokens).T


def train_single_process(model, dataset, epochs, gpus):
    loader = DataLoader(dataset, batch_size=512, shuffle=True, num_workers=8, pin_memory=True, persistent_workers=True)
    if gpus > 1:
        model = nn.DataParallel(model, device_ids=list(range(gpus)))  # expect: VP604[MEDIUM]
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for epoch in range(epochs):
        for images, labels in loader:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(images.cuda(non_blocking=True)), labels.cuda(non_blocking=True))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def train_sharded(model, loader, optimizer, accum_steps, rank):
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    for step, (images, labels) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(images.cuda(non_blocking=True))
            loss = F.cross_entropy(logits, labels.cuda(non_blocking=True)) / accum_steps
        loss.backward()  # expect: VP602[MEDIUM]
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        correct = (logits.argmax(-1) == labels.cuda(non_blocking=True)).sum()
        per_rank = [None] * dist.get_world_size()
        dist.all_gather_object(per_rank, {"step": step, "correct": correct.item()})  # expect: VP601[MEDIUM], VP201[MEDIUM]
        if rank == 0:
            print("correct per rank:", [entry["correct"] for entry in per_rank])
        dist.monitored_barrier()  # expect: VP603[MEDIUM]
