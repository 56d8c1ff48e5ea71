"""Host tensors across calls: what a helper returns in host memory, and math on what each call
passes, is read on the host without waiting for the device (issue "Findings that hold on code
never seen": host tensors returned by helpers were read as device values)."""

from __future__ import annotations

from tests.static.test_cross_module_heat import findings, write

TARGETS = """
    import torch


    def box_targets(boxes, anchors):
        gt = torch.cat((torch.zeros((boxes.size(0), 2)), boxes[:, 2:4]), 1)
        return overlaps(gt, torch.FloatTensor(anchors))


    def overlaps(box_a, box_b):
        a, b = box_a.size(0), box_b.size(0)
        low = torch.max(box_a[:, :2].unsqueeze(1).expand(a, b, 2), box_b[:, :2].unsqueeze(0).expand(a, b, 2))
        high = torch.min(box_a[:, 2:].unsqueeze(1).expand(a, b, 2), box_b[:, 2:].unsqueeze(0).expand(a, b, 2))
        inter = torch.clamp(high - low, min=0)
        area = (box_a[:, 2] * box_a[:, 3]).unsqueeze(1).expand_as(inter[..., 0])
        return inter[..., 0] * inter[..., 1] / area


    def host_grid(n):
        return torch.zeros(n, 4)
"""

LOOP = """
    import torch
    from targets import box_targets, host_grid, overlaps


    def train(model, loader, optimizer, anchors):
        for images, boxes in loader:
            out = model(images.cuda(non_blocking=True))
            loss = out.mean()
            loss.backward()
            optimizer.step()
            best = torch.argmax(box_targets(boxes.cpu(), anchors), dim=-1)
            for index, anchor in enumerate(best):
                if anchor not in (0, 1, 2):
                    continue
                if anchor > 1:
                    print(index)
            grid = host_grid(8)
            if grid.sum() > 0:
                print("grid")
            pred = overlaps(out[:, :4], out[:, 4:8])
            if pred.max() > 0.5:
                print("overlap")


    def main():
        model = torch.nn.Linear(4, 8).cuda()
        loader = torch.utils.data.DataLoader([], pin_memory=True, num_workers=2, persistent_workers=True)
        train(model, loader, torch.optim.SGD(model.parameters(), lr=0.1), [(1.0, 2.0), (3.0, 4.0)])
"""


def test_math_a_helper_does_on_host_tensors_is_read_without_a_sync(tmp_path):
    # `overlaps` of host boxes (through `box_targets`) is a host tensor; of the model's outputs it
    # is on the device: each call is judged by what it passes, and only the second read waits.
    write(tmp_path, {"targets.py": TARGETS, "train.py": LOOP})
    assert findings(tmp_path, ("VP201",)) == [("train.py", "VP201", 22, "MEDIUM", "step")]


def test_a_host_tensor_a_helper_returns_is_no_device_value(tmp_path):
    write(tmp_path, {"targets.py": TARGETS, "train.py": LOOP.replace("grid = host_grid(8)", "grid = host_grid(8).cuda()")})
    assert findings(tmp_path, ("VP201",)) == [
        ("train.py", "VP201", 19, "MEDIUM", "step"), ("train.py", "VP201", 22, "MEDIUM", "step"),
    ]


def test_the_device_read_is_proven_by_what_that_call_passes(tmp_path):
    from verifier.config import Settings
    from verifier.findings import Premise, Status
    from verifier.static.runner import analyze_paths

    write(tmp_path, {"targets.py": TARGETS, "train.py": LOOP})
    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    value = next(e for e in finding.evidence if e.premise is Premise.VALUE)
    assert (finding.line, value.status) == (22, Status.PROVEN)
    assert value.text == "`pred.max() > 0.5` is on the accelerator: returned on the accelerator by `overlaps`"


def test_arrays_moved_to_numpy_are_no_host_tensors_and_masks_of_them_no_sync(tmp_path):
    # `t.cpu().numpy()` is in host memory but no tensor: a helper's boolean mask of what every
    # caller passes as NumPy is NumPy indexing (no VP205), as in the caller's own code.
    write(tmp_path, {
        "score.py": """
            import numpy as np
            import torch


            def pixel_accuracy(output, target):
                return (output.argmax(1) == target.cuda()).float().mean()


            def hist_info(pred, label, num_cls):
                keep = (label >= 0) & (label < num_cls)
                return np.bincount(num_cls * label[keep].astype(int) + pred[keep], minlength=num_cls ** 2)
        """,
        "train.py": """
            import torch
            from score import hist_info


            def train(model, loader, optimizer):
                for images, targets in loader:
                    out = model(images.cuda(non_blocking=True))
                    loss = out.mean()
                    loss.backward()
                    optimizer.step()
                    pred = torch.argmax(out, 1).cpu().data.numpy()
                    hist = hist_info(pred, targets.cpu().numpy(), 21)


            def main():
                model = torch.nn.Linear(4, 21).cuda()
                loader = torch.utils.data.DataLoader([], pin_memory=True, num_workers=2, persistent_workers=True)
                train(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))
        """,
    })
    assert findings(tmp_path, ("VP205",)) == []


def test_an_iterator_over_a_loader_is_a_source_not_a_host_tensor(tmp_path):
    # `iter(loader)` lives in host memory, but it is a batch source: `next()` of it gives batches,
    # and a wrapped model called on one (it scatters them to its devices) is not a host result.
    write(tmp_path, {"train.py": """
        import torch


        def train(segmentation_module, iterator, optimizer, steps):
            for i in range(steps):
                batch = next(iterator)
                loss, acc = segmentation_module(batch)
                loss = loss.mean()
                loss.backward()
                optimizer.step()
                print(loss.item())


        def main():
            module = torch.nn.DataParallel(torch.nn.Linear(4, 2)).cuda()
            loader = torch.utils.data.DataLoader([], pin_memory=True, num_workers=2, persistent_workers=True)
            optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
            batches = iter(loader)
            for epoch in range(10):
                train(module, batches, optimizer, 100)
    """})
    assert findings(tmp_path, ("VP201",)) == [("train.py", "VP201", 12, "MEDIUM", "step")]
