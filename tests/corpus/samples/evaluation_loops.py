"""Validation, test and inference loops for an image classifier: some right, some wrong."""

import torch
import torch.nn.functional as F


def validate(model, loader, device):
    """Switches to eval mode but leaves autograd on."""
    model.eval()
    total_loss = torch.zeros((), device=device)
    correct = 0
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        logits = model(images)  # expect: VP404[MEDIUM]
        total_loss += F.cross_entropy(logits, labels, reduction="sum")  # expect: VP401[CRITICAL]
        correct += int((logits.argmax(1) == labels).sum())  # expect: VP201[LOW]
    model.train()
    return total_loss.item() / len(loader.dataset), correct / len(loader.dataset)


@torch.no_grad()
def evaluate_topk(model, loader, device, k=5):
    model.eval()
    hits = torch.zeros((), device=device, dtype=torch.long)
    for images, labels in loader:
        logits = model(images.to(device, non_blocking=True))
        topk = logits.topk(k, dim=1).indices
        hits += (topk == labels.to(device, non_blocking=True).unsqueeze(1)).any(dim=1).sum()
    return hits.item() / len(loader.dataset)


def evaluate_loss(model, loader, device):
    model.eval()
    torch.set_grad_enabled(False)
    total = torch.zeros((), device=device)
    for images, labels in loader:
        logits = model(images.to(device, non_blocking=True))
        total += F.cross_entropy(logits, labels.to(device, non_blocking=True), reduction="sum")
    torch.set_grad_enabled(True)
    return total.item() / len(loader.dataset)


def test(model, loader, device, class_names):
    """Collects the probabilities of the whole test set, with autograd still on."""
    model.eval()
    all_probs, all_labels = [], []
    for images, labels in loader:
        probs = model(images.to(device, non_blocking=True)).softmax(-1)  # expect: VP404[MEDIUM]
        all_probs.append(probs)
        all_labels.append(labels)
    probs = torch.cat(all_probs)
    labels = torch.cat(all_labels).to(device)
    predicted = probs.argmax(1)
    accuracy = (predicted == labels).float().mean()
    print(f"test accuracy {accuracy.item():.4f} on {len(labels)} images")
    per_class = {name: (predicted[labels == i] == i).float().mean().item() for i, name in enumerate(class_names)}
    return accuracy.item(), per_class


def predict(model, loader, device):
    model.eval()
    with torch.inference_mode():
        outputs = [model(batch.to(device, non_blocking=True)).softmax(-1) for batch in loader]
    return torch.cat(outputs).cpu()


def sliding_window_inference(model, crop_loader, device):
    """Segments large volumes one crop at a time and keeps the masks on the host."""
    model.eval()
    masks = []
    with torch.inference_mode():
        for crops, coords in crop_loader:
            logits = model(crops.to(device, non_blocking=True))
            masks.append((logits.argmax(1).to(torch.uint8).cpu(), coords))  # expect: VP201[LOW]
            torch.cuda.empty_cache()  # expect: VP403[LOW]
    return masks
