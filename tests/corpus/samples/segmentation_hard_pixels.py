"""Semantic segmentation with online hard-pixel mining and per-step loss bookkeeping (BF16)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

NUM_CLASSES = 21


class PixelClassifier(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1))
        self.head = nn.Conv2d(width, NUM_CLASSES, 1)

    def forward(self, images):
        return self.head(F.relu(self.stem(images)))


def train(train_set, val_set, epochs=20, keep_ratio=0.25):
    device = torch.device("cuda")
    model = PixelClassifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=8, pin_memory=True, persistent_workers=True)
    step_losses = torch.zeros(epochs * len(loader))
    step = 0
    for epoch in range(epochs):
        model.train()
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(images)
            pixel_loss = F.cross_entropy(logits.float(), labels, reduction="none")
            hard = pixel_loss > pixel_loss.mean()
            loss = pixel_loss[hard].mean()  # expect: VP205[MEDIUM]
            kept = torch.where(hard, pixel_loss, torch.zeros_like(pixel_loss))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

            predicted = logits.argmax(dim=1)
            classes_seen = torch.unique(predicted)  # expect: VP205[MEDIUM]
            step_losses[step] = loss.detach()  # expect: VP206[MEDIUM]
            parts = torch.tensor([loss.detach(), kept.detach().mean()])  # expect: VP206[MEDIUM]
            step += 1
        validate(model, val_set, device)
    return step_losses


def validate(model, val_set, device):
    loader = DataLoader(val_set, batch_size=16, num_workers=4, pin_memory=True, persistent_workers=True)
    model.eval()
    with torch.no_grad():
        for images, labels in loader:
            logits = model(images.to(device, non_blocking=True))
            confident = logits.softmax(dim=1).sum(dim=1) > 0.5
            picked = logits[confident]  # expect: VP205[LOW]
            masked = logits.masked_fill(~confident.unsqueeze(1), 0.0)
