"""A patch classifier trained under torch.compile, with a compiled loss helper (BF16)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchClassifier(nn.Module):
    def __init__(self, patch=16, width=256, classes=100):
        super().__init__()
        self.embed = nn.Conv2d(3, width, patch, stride=patch)
        self.mixer = nn.TransformerEncoder(nn.TransformerEncoderLayer(width, 8, batch_first=True), 4)
        self.head = nn.Linear(width, classes)

    def forward(self, images: torch.Tensor):
        tokens = self.embed(images).flatten(2).transpose(1, 2)
        tokens = self.mixer(tokens)
        if not torch.compiler.is_compiling():
            print("token norm", tokens.norm().item())
        if tokens.isnan().any():  # expect: VP207[MEDIUM], VP201[MEDIUM]
            tokens = torch.nan_to_num(tokens)
        return self.head(tokens.mean(dim=1))


@torch.compile(fullgraph=False)
def smoothed_loss(logits: torch.Tensor, targets: torch.Tensor, smoothing: float = 0.1):
    loss = F.cross_entropy(logits, targets, label_smoothing=smoothing)
    print(f"loss {loss}")  # expect: VP207[MEDIUM], VP201[MEDIUM]
    return loss


def train(loader, epochs=5):
    device = torch.device("cuda")
    model = torch.compile(PatchClassifier().to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    for epoch in range(epochs):
        for images, targets in loader:
            images = images.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(images)
            loss = smoothed_loss(logits.float(), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
