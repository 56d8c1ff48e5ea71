"""Node classification on one citation graph held on the device: one update per epoch.

The whole graph is the batch, so each iteration of the epoch loop makes exactly one optimizer
step and then scores the three splits. The per-epoch reads of the loss and the accuracies are the
point of the loop, not a per-batch stall.
"""

import torch
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
graph = load_citation_graph().to(device)
net = TwoLayerGraphConv(graph.num_features, 64, graph.num_classes).to(device)
optimizer = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=5e-4)


def fit_once():
    net.train()
    optimizer.zero_grad()
    scores = net(graph.features, graph.edges)
    loss = F.cross_entropy(scores[graph.train_mask], graph.labels[graph.train_mask])
    loss.backward()
    optimizer.step()
    return float(loss)


@torch.no_grad()
def score_splits():
    net.eval()
    predicted = net(graph.features, graph.edges).argmax(dim=-1)
    accuracies = []
    for mask in (graph.train_mask, graph.val_mask, graph.test_mask):
        accuracies.append(int((predicted[mask] == graph.labels[mask]).sum()) / int(mask.sum()))
    return accuracies


best = 0.0
for epoch in range(1, 201):  # expect: VP306[INFO]
    loss = fit_once()
    train_acc, val_acc, test_acc = score_splits()
    best = max(best, val_acc)
    print(f"epoch {epoch:03d} loss {loss:.4f} train {train_acc:.3f} val {val_acc:.3f} test {test_acc:.3f}")
