"""Regressions from real trainers: the update happens in a helper class of another module.

A `while True:` loop calls `run_step()`, which runs a micro-batch loop (backward) and then a
mixed-precision helper that steps the optimizer; that helper module never names a device (its
tensors come from the caller), and it reads one norm per parameter tensor before the update.
"""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

HELPER = """
    import numpy as np
    import torch


    class HalfPrecisionTrainer:
        def __init__(self, net):
            self.net = net
            self.master_params = list(net.parameters())
            self.log_scale = 16.0

        def backward(self, loss):
            (loss * 2 ** self.log_scale).backward()

        def step(self, opt):
            grad_sq = 0.0
            for p in self.master_params:
                with torch.no_grad():
                    grad_sq += torch.norm(p.grad, dtype=torch.float32).item() ** 2
            opt.step()
            return np.sqrt(grad_sq)

        def total_norm(self):
            return torch.norm(self.master_params[0]).item()


    def describe(weights):
        return [w.sum().item() for w in weights]
"""

LOOP = """
    from half_precision import HalfPrecisionTrainer


    class Loop:
        def __init__(self, net, data, opt, micro):
            self.trainer = HalfPrecisionTrainer(net)
            self.net = net
            self.data = data
            self.opt = opt
            self.micro = micro

        def run(self):
            while True:
                batch = next(self.data)
                self.run_step(batch)
                if self.steps % 100 == 0:
                    print(self.trainer.total_norm())

        def run_step(self, batch):
            self.accumulate(batch)
            self.trainer.step(self.opt)

        def accumulate(self, batch):
            for i in range(0, batch.shape[0], self.micro):
                part = batch[i : i + self.micro].to("cuda")
                loss = self.net(part).mean()
                self.trainer.backward(loss)
"""

HOST_ONLY_SCRIPT = """
    import torch


    def norms(params):
        total = 0.0
        for p in params:
            total += torch.norm(p).item()
        return total


    net = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(100):
        loss = net(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        print(norms(net.parameters()))
"""


def write(root, files: dict[str, str]) -> None:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))


def findings(root, select=("VP2",)) -> list[tuple[str, str, int, str, str]]:
    result = analyze_paths([str(root)], Settings(select=select))
    return [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.severity.name, f.heat.label) for f in result.findings]


def test_per_parameter_read_in_a_helper_stepped_from_a_while_loop(tmp_path):
    # The while loop steps the optimizer through run_step(): it is the step loop, not an epoch
    # loop around the micro-batch loop; the helper module is lent the caller's accelerator. Where
    # the master parameters live is not shown in the helper: assumed, so MEDIUM, not a block.
    write(tmp_path, {"half_precision.py": HELPER, "loop.py": LOOP})
    assert findings(tmp_path) == [("half_precision.py", "VP201", 19, "MEDIUM", "step")]


def test_helper_module_alone_names_no_device_and_stays_quiet(tmp_path):
    write(tmp_path, {"half_precision.py": HELPER})
    assert findings(tmp_path) == []


def test_host_only_script_stays_quiet_even_with_a_per_parameter_read(tmp_path):
    write(tmp_path, {"half_precision.py": HELPER, "loop.py": LOOP, "cpu/fit.py": HOST_ONLY_SCRIPT})
    assert findings(tmp_path) == [("half_precision.py", "VP201", 19, "MEDIUM", "step")]


def test_a_for_header_is_its_own_statement(tmp_path):
    # One statement, one finding: the reads in the `for` header are not part of the line above.
    write(tmp_path, {"log.py": """
        import torch


        def log_losses(ts, losses, record):
            for key, values in losses.items():
                record(key, values.mean().item())
                for t, v in zip(ts.cpu().numpy(), values.detach().cpu().numpy()):
                    record(f"{key}_{int(t)}", v)


        device = "cuda"
        for x, t in loader:
            out = model(x.to(device), t.to(device))
            loss = out.mean()
            loss.backward()
            opt.step()
            log_losses(t, {"loss": out}, print)
    """})
    assert findings(tmp_path) == [
        ("log.py", "VP201", 7, "LOW", "step"),
        ("log.py", "VP201", 8, "LOW", "step"),
    ]


def test_helper_in_a_folder_without_init_is_reached_through_its_dotted_import(tmp_path):
    # `import tools.dist as dist` from the project root: a namespace package, keyed `dist`.
    write(tmp_path, {
        "tools/dist.py": """
            import torch
            import torch.distributed as torch_dist


            def mean_across_ranks(value):
                reduced = torch.tensor(value).cuda()
                torch_dist.all_reduce(reduced)
                return reduced.item()
        """,
        "train.py": """
            import tools.dist as dist

            for step, (x, y) in enumerate(loader):
                loss = model(x.cuda(non_blocking=True)).mean()
                loss.backward()
                optimizer.step()
                logged = dist.mean_across_ranks(loss.item())
        """,
    })
    assert findings(tmp_path) == [
        ("dist.py", "VP201", 9, "MEDIUM", "step"),
        ("train.py", "VP201", 8, "MEDIUM", "step"),
    ]
