"""Multi-GPU ImageNet-style training with DistributedDataParallel, launched with torchrun."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.utils.tensorboard import SummaryWriter

import train_utils


def setup():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return local_rank, dist.get_rank(), dist.get_world_size()


def validate(ddp_model, val_loader, local_rank):
    ddp_model.eval()
    counts = torch.zeros(2, device=f"cuda:{local_rank}")
    for images, targets in val_loader:
        logits = ddp_model(images.cuda(local_rank, non_blocking=True))  # expect: VP404[MEDIUM]
        counts[0] += (logits.argmax(1) == targets.cuda(local_rank, non_blocking=True)).sum()
        counts[1] += targets.size(0)
    dist.all_reduce(counts)
    ddp_model.train()
    return (counts[0] / counts[1]).item()


def main(build_model, dataset, val_set, epochs=90, batch_size=256):
    local_rank, rank, world_size = setup()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(
        dataset, batch_size=batch_size, sampler=sampler,
        num_workers=8, pin_memory=True, persistent_workers=True,
    )
    val_loader = DataLoader(
        val_set, batch_size=batch_size, sampler=DistributedSampler(val_set, shuffle=False),
        num_workers=4, pin_memory=True, persistent_workers=True,
    )
    model = build_model().cuda(local_rank)
    ddp_model = DDP(model, device_ids=[local_rank])
    criterion = torch.nn.CrossEntropyLoss().cuda(local_rank)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1 * world_size, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    writer = SummaryWriter("runs/ddp") if rank == 0 else None
    global_step = 0

    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        ddp_model.train()
        loss_sum = torch.zeros(2, device=f"cuda:{local_rank}")
        for images, targets in loader:  # expect: VP306[INFO]
            images = images.cuda(local_rank, non_blocking=True)
            targets = targets.cuda(local_rank, non_blocking=True)
            loss = criterion(ddp_model(images), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_l2 = train_utils.global_grad_norm(ddp_model.parameters())
            optimizer.step()
            torch.cuda.synchronize()  # expect: VP203[HIGH]
            count = torch.tensor(float(images.size(0))).cuda(local_rank)  # expect: VP104[MEDIUM]
            loss_sum += torch.stack([loss.detach() * count, count])
            global_step += 1
            if rank == 0:
                writer.add_scalar("train/loss", loss, global_step)  # expect: VP501[LOW]
                writer.add_scalar("train/grad_l2", grad_l2, global_step)
        dist.all_reduce(loss_sum)
        scheduler.step()
        val_acc = validate(ddp_model, val_loader, local_rank)
        if rank == 0:
            print(f"epoch {epoch}: loss {(loss_sum[0] / loss_sum[1]).item():.4f} val acc {val_acc:.4f}")
            os.system("nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv")  # expect: VP204[MEDIUM]
            torch.save(ddp_model.module.state_dict(), f"checkpoint_{epoch:03d}.pt")
        dist.barrier()

    ddp_model.module.cpu()
    dist.destroy_process_group()


if __name__ == "__main__":
    from torchvision.datasets import ImageFolder
    from torchvision.models import resnet50
    from torchvision.transforms import v2

    train_tf = v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ToTensor()])
    val_tf = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.ToTensor()])
    root = os.environ.get("DATA_DIR", "/data/imagenet")
    main(resnet50, ImageFolder(f"{root}/train", transform=train_tf), ImageFolder(f"{root}/val", transform=val_tf))
