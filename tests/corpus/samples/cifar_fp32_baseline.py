"""CIFAR-10 ResNet-18 baseline in FP32: the script most image projects start from."""

import time

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
epochs = 30

augment = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor()])
train_set = torchvision.datasets.CIFAR10("data", train=True, download=True, transform=augment)
val_set = torchvision.datasets.CIFAR10("data", train=False, download=True, transform=T.ToTensor())

train_loader = DataLoader(train_set, batch_size=128, shuffle=True)  # expect: VP103[LOW]
val_loader = DataLoader(val_set, batch_size=512, num_workers=2, pin_memory=True, persistent_workers=True)

net = torchvision.models.resnet18(num_classes=10).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)


def evaluate():
    net.eval()
    correct = torch.zeros((), device=device)
    with torch.no_grad():
        for images, labels in val_loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            correct += (net(images).argmax(1) == labels).sum()
    net.train()
    return correct.item() / len(val_set)


history = []
best_acc = 0.0
for epoch in range(epochs):
    net.train()
    running_loss = 0.0
    started = time.perf_counter()
    for step, (images, labels) in enumerate(train_loader):  # expect: VP306[INFO]
        images, labels = images.to(device), labels.to(device)  # expect: VP102[LOW]
        optimizer.zero_grad()
        outputs = net(images)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss  # expect: VP401[LOW]  (the backward above frees the activations)
        history.append(loss)  # expect: VP402[HIGH]
        if step % 100 == 99:
            print(f"[{epoch + 1}, {step + 1:5d}] loss: {loss.item():.3f}")
    scheduler.step()
    acc = evaluate()
    elapsed = time.perf_counter() - started
    print(f"epoch {epoch + 1}: loss {running_loss / len(train_loader):.3f} acc {acc:.3f} ({elapsed:.0f}s)")
    if acc > best_acc:
        best_acc = acc
        torch.save(net.state_dict(), "resnet18_cifar10.pt")

print(f"best accuracy {best_acc:.3f}")
net.cpu()
