"""A script that names its small helpers with lambdas, as notebooks and quick experiments do."""

import torch

device = torch.device("cuda")
send_to_device = lambda parts: [p.to(device) for p in parts]
read_loss = lambda value: value.item()  # expect: VP201[MEDIUM]
scale = lambda t, factor=0.5: t * factor


def build(width):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU()).to(device)


def evaluate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = send_to_device([x, y])
            total += torch.nn.functional.mse_loss(model(x), y)
    return total


def train(loader, val_loader, epochs=10):
    model = build(64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in loader:  # expect: VP306[INFO]
            x, y = send_to_device([x, y])
            loss = torch.nn.functional.mse_loss(scale(model(x)), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            print(read_loss(loss))
        print(float(evaluate(model, val_loader)))
    return model
