"""What a project function returns reaches its callers, in any module: a tensor on the device
made by a helper is read on the host where it is returned, and a number is no tensor, however
the helper is named."""

from __future__ import annotations

from tests.static.test_cross_module_heat import findings, write

STEP = """
    import torch


    def forward_backward(model, batch, device):
        inputs, targets = batch
        outputs = model(inputs.to(device, non_blocking=True))
        loss = torch.nn.functional.cross_entropy(outputs, targets.to(device, non_blocking=True))
        loss.backward()
        return loss.detach()


    def scalar_of(value):
        return value.item()


    def compute_loss_value(model, batch, device):
        return forward_backward(model, batch, device).item()
"""

LOOP = """
    import torch
    from step import forward_backward, scalar_of, compute_loss_value


    def train(model, loader, optimizer, device):
        for batch in loader:
            optimizer.zero_grad()
            value = forward_backward(model, batch, device)
            optimizer.step()
            if value > 10:
                print("diverged")


    def main():
        device = torch.device("cuda")
        model = torch.nn.Linear(4, 2).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = torch.utils.data.DataLoader([], pin_memory=True, num_workers=2)
        train(model, loader, optimizer, device)
"""


def test_a_device_tensor_returned_from_another_module_is_read_where_it_is_tested(tmp_path):
    write(tmp_path, {"step.py": STEP, "train.py": LOOP})
    assert findings(tmp_path, ("VP201",)) == [("train.py", "VP201", 11, "MEDIUM", "step")]


def test_the_finding_proves_where_the_value_lives_from_the_return(tmp_path):
    write(tmp_path, {"step.py": STEP, "train.py": LOOP})
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    value = next(e for e in finding.evidence if e.premise.name == "VALUE")
    assert (value.status.name, value.line) == ("PROVEN", 9)
    assert value.text == "`value > 10` is on the accelerator: returned on the accelerator by `forward_backward`"


def test_a_number_returned_by_a_helper_named_like_a_loss_is_no_tensor(tmp_path):
    # `compute_loss_value(...)` is a tensor by its name alone; its return, `.item()`, says a number.
    loop = LOOP.replace("value = forward_backward(model, batch, device)", "value = compute_loss_value(model, batch, device)")
    write(tmp_path, {"step.py": STEP, "train.py": loop})
    assert findings(tmp_path, ("VP201",)) == [("step.py", "VP201", 18, "MEDIUM", "step")]


def test_a_method_returning_a_device_tensor_is_read_in_the_calling_method(tmp_path):
    write(tmp_path, {"trainer.py": """
        import torch


        class Trainer:
            def __init__(self, model, device):
                self.model = model.to(device)
                self.device = device

            def compute(self, batch):
                outputs = self.model(batch.to(self.device, non_blocking=True))
                return outputs.mean()

            def fit(self, loader, optimizer):
                for batch in loader:
                    optimizer.zero_grad()
                    score = self.compute(batch)
                    score.backward()
                    optimizer.step()
                    print(f"score {float(score):.3f}")
    """})
    assert [f[1:] for f in findings(tmp_path, ("VP201",))] == [("VP201", 20, "MEDIUM", "step")]


def test_extracting_the_step_into_a_helper_keeps_the_finding(tmp_path):
    """A refactoring that must not change findings: the step inline, and the same step moved into
    a function of another module that returns the loss."""
    inline = tmp_path / "inline"
    write(inline, {"train.py": """
        import torch


        def train(model, loader, optimizer, device):
            for inputs, targets in loader:
                optimizer.zero_grad()
                outputs = model(inputs.to(device, non_blocking=True))
                loss = torch.nn.functional.cross_entropy(outputs, targets.to(device, non_blocking=True))
                loss.backward()
                optimizer.step()
                running = loss.detach()
                if running > 10:
                    print("diverged")
    """})
    extracted = tmp_path / "extracted"
    write(extracted, {
        "step.py": """
            import torch


            def one_step(model, inputs, targets, optimizer, device):
                optimizer.zero_grad()
                outputs = model(inputs.to(device, non_blocking=True))
                loss = torch.nn.functional.cross_entropy(outputs, targets.to(device, non_blocking=True))
                loss.backward()
                optimizer.step()
                return loss.detach()
        """,
        "train.py": """
            from step import one_step


            def train(model, loader, optimizer, device):
                for inputs, targets in loader:
                    running = one_step(model, inputs, targets, optimizer, device)
                    if running > 10:
                        print("diverged")
        """,
    })
    before = [(f[1], f[3]) for f in findings(inline, ("VP201",))]
    after = [(f[1], f[3]) for f in findings(extracted, ("VP201",))]
    assert before == after == [("VP201", "MEDIUM")]


def test_a_helper_whose_returns_disagree_lends_nothing(tmp_path):
    step = STEP + """

    def maybe_step(model, batch, device, skip):
        if skip:
            return 0.0
        return forward_backward(model, batch, device)
"""
    loop = LOOP.replace("from step import forward_backward, scalar_of, compute_loss_value", "from step import maybe_step").replace(
        "value = forward_backward(model, batch, device)", "value = maybe_step(model, batch, device, False)"
    )
    write(tmp_path, {"step.py": step, "train.py": loop})
    assert findings(tmp_path, ("VP201",)) == []


def test_a_tuple_returned_on_every_path_is_unpacked_element_by_element(tmp_path):
    write(tmp_path, {
        "step.py": """
            import torch


            def train_step(model, batch, optimizer, device):
                inputs = batch.to(device, non_blocking=True)
                optimizer.zero_grad()
                scores = model(inputs)
                loss = scores.mean()
                loss.backward()
                optimizer.step()
                return loss.detach(), inputs.shape[0], scores.max()
        """,
        "train.py": """
            from step import train_step


            def train(model, loader, optimizer, device):
                for batch in loader:
                    loss, count, top = train_step(model, batch, optimizer, device)
                    if count > 1000:
                        continue
                    if top > 100:
                        break
                    print(f"{loss:.3f} over {count}")
        """,
    })
    # `top` and `loss` are device tensors read on the host (the second right after the first:
    # a round trip only); `count` is a number.
    assert findings(tmp_path, ("VP201",)) == [
        ("train.py", "VP201", 10, "MEDIUM", "step"), ("train.py", "VP201", 12, "LOW", "step"),
    ]


AUGMENTED_LOSS = """
    import torch


    class DetectionLoss(torch.nn.Module):
        def bce(self, pred, target):
            return -target * torch.log(pred) - (1.0 - target) * torch.log(1.0 - pred)

        def forward(self, level, prediction, targets=None):
            conf = torch.sigmoid(prediction[..., 4])
            loss = 0
            loss += torch.mean(self.bce(conf, conf))
            return loss
"""

# The step loop's module names no device: only what the loss helper returns says what the sum is.
AUGMENTED_FIT = """
    def fit_one_epoch(model, criterion, optimizer, loader):
        total = 0
        for batch in loader:
            images, targets = batch[0], batch[1]
            outputs = model(images)
            loss_sum = 0
            for level in range(len(outputs)):
                term = criterion(level, outputs[level], targets)
                loss_sum += term
            loss = loss_sum
            loss.backward()
            optimizer.step()
            total += loss.item()
"""

AUGMENTED_MAIN = """
    import torch
    from losses import DetectionLoss
    from fit import fit_one_epoch

    if __name__ == "__main__":
        criterion = DetectionLoss()
        model = torch.nn.Linear(3, 3).cuda()
        loader = torch.utils.data.DataLoader([], num_workers=2, pin_memory=True, persistent_workers=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(10):
            fit_one_epoch(model, criterion, optimizer, loader)
"""


def test_a_loss_summed_in_place_from_zero_is_the_tensor_it_sums(tmp_path):
    # `loss = 0` then `loss += term`: what is returned is what `0 + term` is, not the number it
    # started as; a per-step read of the sum in the caller waits for the device.
    write(tmp_path, {"losses.py": AUGMENTED_LOSS, "fit.py": AUGMENTED_FIT, "train.py": AUGMENTED_MAIN})
    assert findings(tmp_path, ("VP201",)) == [("fit.py", "VP201", 14, "MEDIUM", "step")]


def test_a_counter_added_to_in_place_stays_a_number(tmp_path):
    # `steps = 0; steps += 1`: a number plus a number is a number, read freely on the host.
    write(tmp_path, {"counter.py": """
        import torch


        def count(loader, model, optimizer):
            steps = 0
            for batch in loader:
                model(batch.cuda(non_blocking=True)).sum().backward()
                optimizer.step()
                steps += 1
            return steps


        def main():
            model = torch.nn.Linear(4, 2).cuda()
            loader = torch.utils.data.DataLoader([], pin_memory=True, num_workers=2, persistent_workers=True)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                if count(loader, model, optimizer) > 100:
                    print(float(count(loader, model, optimizer)))
    """})
    assert findings(tmp_path, ("VP201",)) == []


CALLBACK_STEP = """
    import torch

    device = torch.device("cuda")
    model = torch.nn.Linear(4, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(range(10), num_workers=2, pin_memory=True, persistent_workers=True)


    def compute(batch):
        out = model(batch.to(device, non_blocking=True))
        return out.sum(), out


    def run_step(step_fn, batch):
        total, out = step_fn(batch)
        total.backward()
        optimizer.step()
        optimizer.zero_grad()
        return total


    for batch in loader:
        loss = run_step(compute, batch)
        if loss > 5:
            print("diverged")
"""


def test_what_a_callback_returns_is_returned_through_the_function_that_calls_it(tmp_path):
    # `run_step(compute, batch)` returns what it got from calling its parameter: every caller
    # hands it `compute`, whose first return is on the accelerator, so the caller's read of it
    # is proven to wait for the device (not only assumed to, from a tensor's name).
    write(tmp_path, {"train.py": CALLBACK_STEP})
    from verifier.config import Settings
    from verifier.static.runner import analyze_paths

    [finding] = analyze_paths([str(tmp_path)], Settings(select=("VP201",))).findings
    assert (finding.code, finding.line, finding.severity.name) == ("VP201", 25, "MEDIUM")
    value = next(e for e in finding.evidence if e.premise.name == "VALUE")
    assert value.status.name == "PROVEN"
    assert value.text == "`loss > 5` is on the accelerator: returned on the accelerator by `run_step`"
