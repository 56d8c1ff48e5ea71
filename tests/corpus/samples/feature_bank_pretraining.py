"""Self-supervised pre-training that keeps a bank of embeddings, with a retrieval check.

The bank grows by concatenation every step and the epoch length is counted by running the
loader; the retrieval check collects its predictions the same way, only less often.
"""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = torch.device("cuda")


def make_loaders(train_set, val_set):
    train_loader = DataLoader(
        train_set, batch_size=256, shuffle=True, num_workers=8, pin_memory=True, persistent_workers=True
    )
    val_loader = DataLoader(val_set, batch_size=512, num_workers=8, pin_memory=True, persistent_workers=True)
    return train_loader, val_loader


def contrastive_loss(embeddings, temperature=0.1):
    similarity = embeddings @ embeddings.T / temperature
    targets = torch.arange(embeddings.size(0), device=embeddings.device)
    return F.cross_entropy(similarity, targets)


def train_epoch(encoder, train_loader, optimizer):
    encoder.train()
    bank = torch.empty(0, 128, device=device)
    for views, _ in train_loader:
        views = views.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            embeddings = F.normalize(encoder(views), dim=-1)
            loss = contrastive_loss(embeddings)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        bank = torch.cat([bank, embeddings.detach().float()])  # expect: VP406[MEDIUM]
    return bank, len(list(train_loader))  # expect: VP105[MEDIUM]


@torch.no_grad()
def retrieval_predictions(encoder, val_loader, bank):
    encoder.eval()
    predictions = torch.empty(0, dtype=torch.long, device=device)
    for images, _ in val_loader:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            queries = F.normalize(encoder(images.to(device, non_blocking=True)), dim=-1)
        predictions = torch.cat([predictions, (queries.float() @ bank.T).argmax(-1)])  # expect: VP406[LOW]
    return predictions


def main(encoder, train_set, val_set, epochs=100):
    train_loader, val_loader = make_loaders(train_set, val_set)
    encoder = encoder.to(device)
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=1e-3, fused=True)
    planned_steps = epochs * sum(1 for _ in train_loader)  # expect: VP105[LOW]
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-3, total_steps=planned_steps)
    for epoch in range(epochs):
        bank, steps = train_epoch(encoder, train_loader, optimizer)
        scheduler.step()
        if epoch % 10 == 0:
            retrieval_predictions(encoder, val_loader, bank)
    return len(train_loader), len(val_loader.dataset)
