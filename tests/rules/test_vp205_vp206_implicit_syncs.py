"""VP205 (data-dependent shapes) and VP206 (device values into host memory) on realistic loops."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).parents[1] / "corpus" / "samples"


def test_hard_pixel_mining_sample(analyse):
    code = (SAMPLES / "segmentation_hard_pixels.py").read_text(encoding="utf-8")
    assert analyse(code, select=("VP205", "VP206")) == [
        ("VP205", 37, "MEDIUM"),
        ("VP205", 44, "MEDIUM"),
        ("VP206", 45, "MEDIUM"),
        ("VP206", 46, "MEDIUM"),
        ("VP205", 59, "LOW"),
    ]


def test_each_data_dependent_operator_on_device_values(analyse):
    code = """\
    import torch
    device = torch.device("cuda")
    for tokens, labels in loader:
        logits = model(tokens.to(device))
        scores = logits.softmax(-1)
        hits = scores.nonzero()
        rows, cols = torch.nonzero(scores > 0.9, as_tuple=True)
        where_hot = torch.where(scores > 0.9)
        chosen = torch.masked_select(scores, scores > 0.5)
        runs = logits.argmax(-1).unique_consecutive()
        counts = logits.argmax(-1)
        spread = logits.repeat_interleave(counts, dim=0)
        spread_known = logits.repeat_interleave(counts, dim=0, output_size=4096)
        doubled = logits.repeat_interleave(2, dim=0)
        kept = torch.where(scores > 0.9, scores, 0.0)
        found = 3 in counts
        loss = criterion(logits, labels.to(device))
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP205",)) == [
        ("VP205", 6, "MEDIUM"),
        ("VP205", 7, "MEDIUM"),
        ("VP205", 8, "MEDIUM"),
        ("VP205", 9, "MEDIUM"),
        ("VP205", 10, "MEDIUM"),
        ("VP205", 12, "MEDIUM"),
        ("VP205", 16, "MEDIUM"),
    ]


def test_host_tensors_cpu_scripts_guards_and_tests_stay_quiet(analyse):
    host_only = """\
    import torch
    weights = torch.rand(100)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        active = weights[weights > 0.5]
        ids = torch.nonzero(weights > 0.5)
    """
    assert analyse(host_only, select=("VP205", "VP206")) == []
    throttled = """\
    import torch
    device = "cuda"
    history = torch.zeros(10_000)
    for step, (x, y) in enumerate(loader):
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            history[step // 100] = loss.detach()
            print(torch.unique(out.argmax(-1)))
    """
    assert analyse(throttled, select=("VP205", "VP206")) == []
    in_a_test = """\
    import torch
    device = "cuda"
    losses = torch.zeros(3)
    for i, x in enumerate(loader):
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        losses[i] = loss.detach()
    """
    assert analyse(in_a_test, name="test_training.py", select=("VP206",)) == []


def test_a_tested_membership_is_vp201_only(analyse):
    code = """\
    import torch
    device = "cuda"
    for x, y in loader:
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        loss.backward()
        optimizer.step()
        if 0 in out.argmax(-1):
            print("class 0 predicted")
    """
    assert analyse(code, select=("VP201", "VP205")) == [("VP201", 8, "MEDIUM")]


def test_host_values_stay_on_the_host_through_arithmetic(analyse):
    code = """\
    import torch
    device = "cuda"
    for episode in range(100):
        rewards = torch.zeros(500)
        for t in range(500):
            action = policy(state.to(device)).argmax()
            rewards[t] = env_reward(action)
        returns = 0
        for t in reversed(range(500)):
            returns = rewards[t] + 0.99 * returns
            rewards[t] = returns
        loss = policy_loss(rewards.to(device))
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP206",)) == []


def test_tensors_from_helpers_are_not_device_evidence(analyse):
    code = """\
    import torch
    device = torch.device("cuda")

    def class_weights(n):
        return torch.ones(n) / n

    for x, y in loader:
        weights = class_weights(10)
        heavy = weights[weights > 0.05]
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        logits = model(torch.zeros(2, 8))
        picked = logits[logits > 0]
    """
    assert analyse(code, select=("VP205",)) == []


def test_casts_keep_the_place_and_copies_to_the_cpu_leave_the_device(analyse):
    code = """\
    import torch
    device = torch.device("cuda")
    table = torch.zeros(1000)
    for i, (x, y) in enumerate(loader):
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        loss.backward()
        optimizer.step()
        table[i] = out.float().mean().to("cpu")
        half = table.to(torch.float16)
        picked = half[half > 0]
        probs = out.to(torch.float32)
        kept = probs[probs > 0.5]
    """
    assert analyse(code, select=("VP205", "VP206")) == [("VP205", 13, "MEDIUM")]


def test_batches_moved_to_the_device_are_device_tensors(analyse):
    code = """\
    import torch
    import torch.nn.functional as F
    device = torch.device("cuda")
    for step, (tokens, labels) in enumerate(loader):
        tokens, labels = tokens.to(device), labels.to(device, non_blocking=True)
        logits = model(tokens)
        valid = labels != -100
        loss = F.cross_entropy(logits[valid], labels[valid])
        loss.backward()
        optimizer.step()
        masked = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    """
    assert analyse(code, select=("VP205",)) == [("VP205", 8, "MEDIUM")]
