"""VP406: growth by self-concatenation in loops, its severity by heat, and the bounded forms."""

from __future__ import annotations

SELECT = ("VP406",)


def test_predictions_collected_over_a_training_epoch_and_an_evaluation(analyse):
    code = """\
    import torch

    def train_epoch(model, loader, optimizer):
        all_preds = torch.empty(0, 10)
        all_labels = None
        for x, y in loader:
            logits = model(x.cuda(non_blocking=True))
            loss = torch.nn.functional.cross_entropy(logits, y.cuda(non_blocking=True))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            all_preds = torch.cat([all_preds, logits.detach().cpu()])
            if all_labels is None:
                all_labels = y
            else:
                all_labels = torch.cat((all_labels, y), dim=0)
        return all_preds, all_labels

    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        scores = torch.empty(0, device=device)
        for x, _ in loader:
            scores = torch.concat([scores, model(x.to(device)).max(-1).values])
        return scores

    for epoch in range(10):
        train_epoch(model, train_loader, optimizer)
        evaluate(model, val_loader)
    """
    assert analyse(code, select=SELECT, preview=True) == [("VP406", 12, "MEDIUM"), ("VP406", 16, "MEDIUM"), ("VP406", 24, "LOW")]


def test_growth_by_stacking_an_unpacked_tensor_and_by_attribute(analyse):
    code = """\
    import torch

    class Recorder:
        def __init__(self):
            self.frames = torch.empty(0, 3, 64, 64)

        def record(self, env, policy, steps):
            frames = torch.empty(0, 3, 64, 64)
            for t in range(steps):
                frame = env.render()
                frames = torch.stack([*frames, frame])
                self.frames = torch.vstack([self.frames, frame[None]])
            return frames
    """
    assert analyse(code, select=SELECT, preview=True) == [("VP406", 11, "LOW"), ("VP406", 12, "LOW")]


def test_windows_resets_small_loops_and_decoding_stay_quiet(analyse):
    code = """\
    import torch

    def decode(model, idx, steps, block_size):
        for _ in range(steps):
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits = model(idx_cond)[:, -1, :]
            idx = torch.cat((idx, torch.argmax(logits, -1, keepdim=True)), dim=1)
        return idx

    def rolling(stream, window):
        history = torch.empty(0)
        for chunk in stream:
            history = torch.cat([history, chunk])
            history = history[-window:]
        return history

    def heads(x, branches):
        out = x
        for i in range(3):
            out = torch.cat([out, branches[i](x)], dim=1)
        return out

    def per_batch(loader):
        for x, y in loader:
            pair = torch.cat([x, y])
            pair = torch.cat([pair, x[:, :1]])
        features = torch.cat([features[:, :1], features[:, 1:] * 2], dim=1)
    """
    assert analyse(code, select=SELECT, preview=True) == []


def test_growth_outside_any_loop_is_not_reported(analyse):
    code = """\
    import torch
    tokens = torch.cat([cls_token, tokens], dim=1)
    tokens = torch.cat([tokens, register_tokens], dim=1)
    """
    assert analyse(code, select=SELECT, preview=True) == []
