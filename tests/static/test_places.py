"""Where values live: the value premise of host reads and copies, from evidence only."""

from __future__ import annotations

import textwrap

import pytest

from verifier.config import Settings
from verifier.findings import Premise, Status
from verifier.static.runner import analyze_paths


def reads(tmp_path, code: str, select: str = "VP201"):
    """[(line, severity, value status, value text)] for the selected rule's findings."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    result = analyze_paths([str(path)], Settings(select=(select,), cache_dir=None))
    found = []
    for finding in result.findings:
        value = next((e for e in finding.evidence if e.premise is Premise.VALUE), None)
        found.append((finding.line, finding.severity.name, value.status if value else None, value.text if value else ""))
    return found


STEP = """\
import numpy as np
import torch
device = "cuda"
{setup}
for x, y in loader:
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    {read}
"""


@pytest.mark.parametrize(
    ("setup", "read"),
    [
        ("table = torch.from_numpy(np.arange(10))", "v = table[3].item()"),
        ("steps = torch.tensor([1, 2, 3])", "v = steps.sum().item()"),
        ("counts = torch.zeros(10)", "v = counts.tolist()"),
        ("header = torch.zeros(4).cpu()", "v = float(header[0])"),
        ("pinned = torch.empty(8).pin_memory()", "v = pinned.numpy()"),
        # A size read off a device tensor is a Python number: the product is where `torch.rand(1)` is.
        ("", "start = int(torch.rand(1) * 0.33 * loss.size(-1))"),
        ("", "start = int(torch.rand(1) * x.shape[-1])"),
        # A host tensor compared with a setting of unknown type is a host mask.
        ("ids = x.detach().cpu()", "v = (ids[0] != tokenizer.pad_token_id).nonzero()[0].item()"),
        ("ids = x.detach().cpu()", "v = (ids > cfg.threshold).sum().item()"),
    ],
    ids=["from-numpy", "tensor-of-a-list", "factory-without-device", "moved-to-the-host", "pinned",
         "host-factory-times-a-size", "host-factory-times-a-shape", "host-compared-with-a-setting",
         "host-compared-with-an-attribute"],
)
def test_a_host_tensor_is_never_read_as_a_sync(tmp_path, setup, read):
    assert reads(tmp_path, STEP.format(setup=setup, read=read)) == []


def test_a_host_tensor_compared_with_a_tensor_is_not_known_to_be_on_the_host(tmp_path):
    # A 0-dim host tensor mixes with a device one: compared with a known tensor, place unknown.
    code = """\
    import torch


    def train(model, loader, optimizer, reference: torch.Tensor):
        for x, y in loader:
            ids = x.detach().cpu()
            loss = model(x.cuda(), y.cuda())
            loss.backward()
            optimizer.step()
            a = (ids != reference).sum().item()
            b = (ids != model.pad_id).sum().item()
    """
    found = [(line, severity, status.name) for line, severity, status, _ in reads(tmp_path, code) if line > 6]
    assert found == [(10, "MEDIUM", "ASSUMED")]


def test_a_device_tensor_times_a_size_is_still_on_the_device(tmp_path):
    code = STEP.format(setup="", read="total = float(loss * x.size(0))")
    assert [(line, severity) for line, severity, _, _ in reads(tmp_path, code)] == [(9, "MEDIUM")]


def test_a_module_moved_in_place_puts_its_outputs_on_the_device(tmp_path):
    code = """\
    import torch
    model = GPT(config)
    model.to(device)
    for x, y in loader:
        logits, loss = model(x, y)
        loss = loss / accumulation
        loss.backward()
        optimizer.step()
        print(loss.item())
    """
    [(line, severity, status, text)] = reads(tmp_path, code)
    assert (line, severity, status) == (9, "MEDIUM", Status.PROVEN)
    assert text == "`loss` is on the accelerator: the output of `model`, which is moved with `.to(device)`"


def test_what_a_tensor_was_moved_to_is_where_it_is(tmp_path):
    code = """\
    import torch
    for x, y in loader:
        x = x.cuda()
        loss = (model(x) - y.cuda()).pow(2).mean()
        loss.backward()
        optimizer.step()
        total = x.sum().item()
    """
    [(line, _, status, text)] = reads(tmp_path, code)
    assert (line, status, text) == (7, Status.PROVEN, "`x.sum()` is on the accelerator: moved with `.cuda()`")


def test_a_tensor_whose_place_is_not_shown_is_only_assumed(tmp_path):
    code = """\
    import torch
    def step(batch):
        loss = compute(batch)
        loss.backward()
        optimizer.step()
        return loss

    device = "cuda"
    for batch in loader:
        loss = step(batch)
        total = loss.item()
    """
    # A tensor (a backward runs on it) in a module that names a device; where it lives is not shown.
    [(_, severity, status, _)] = reads(tmp_path, code)
    assert (severity, status) == ("MEDIUM", Status.ASSUMED)


def test_parameters_live_with_their_module_and_a_read_per_parameter_blocks_only_when_shown(tmp_path):
    code = """\
    import torch
    model = Net().to("cuda")
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        for p in model.parameters():
            norm = p.grad.norm().item()
        optimizer.step()
    """
    [(line, severity, status, text)] = reads(tmp_path, code)
    assert (line, severity, status) == (7, "HIGH", Status.PROVEN)
    assert text.endswith("moved with `.to(device)`")
    unplaced = code.replace('Net().to("cuda")', "Net()").replace("model(x)", "model(x.to(device))")
    assert [(s, v) for _, s, v, _ in reads(tmp_path, unplaced)] == [("MEDIUM", Status.ASSUMED)]


def test_batches_of_a_prepared_loader_are_on_the_device(tmp_path):
    code = """\
    from accelerate import Accelerator
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        batch = {k: v.to(accelerator.device) for k, v in batch.items()}
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
    """
    # The copy of a batch the prepared loader already placed is a no-op: no blocking copy.
    assert reads(tmp_path, code, select="VP102") == []
    plain = code.replace("model, optimizer, loader = accelerator.prepare(model, optimizer, loader)", "")
    assert [line for line, *_ in reads(tmp_path, plain, select="VP102")] == [5]


def test_a_legacy_tensor_type_allocates_from_a_shape_and_copies_from_data(analyse):
    code = """\
    import torch
    device = torch.device("cuda")
    batch_size = 32
    for step in range(steps):
        state = env.observe()
        observed = torch.FloatTensor(state).to(device)
        targets = torch.LongTensor(batch_size).random_(8).to(device)
        loss = model(observed, targets)
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP104",)) == [("VP104", 7, "MEDIUM")]


def test_a_batch_through_a_progress_bar_and_enumerate_is_still_the_loaders_host_batch(analyse):
    code = """\
    import torch
    from tqdm import tqdm

    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    model = Net().cuda()
    for batch_id, (points, target) in tqdm(enumerate(loader, 0), total=len(loader)):
        points = points.data.numpy()
        points = torch.Tensor(augment(points)).cuda()
        loss = model(points, target.cuda())
        loss.backward()
        optimizer.step()
        print(loss.item())
    """
    # The host batch is read before it is moved: no wait. The loss read is the step's one sync.
    assert analyse(code, select=("VP201",)) == [("VP201", 12, "MEDIUM")]


def test_a_progress_bar_entered_with_with_iterates_the_loaders_host_batches(analyse):
    code = """\
    import torch
    from tqdm import tqdm

    device = torch.device("cuda")
    loader = torch.utils.data.DataLoader(dataset, batch_size=256)
    model = Net().to(device)
    with tqdm(enumerate(loader), disable=quiet) as bar:
        for _, (x, y) in bar:
            x = x.to(device).float()
            loss = criterion(model(x), y.to(device, non_blocking=True))
            loss.backward()
            optimizer.step()
    """
    # The bar yields the loader's pageable batches: `x` is copied with the host waiting for it.
    assert analyse(code, select=("VP102",)) == [("VP102", 9, "LOW")]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # `.to(other.device)` follows `other`: a host tensor's device is the host.
        ("scores = torch.zeros(4).cpu()", []),
        ("scores = torch.zeros(4, device='cuda')", [(9, "MEDIUM", Status.PROVEN, "`totals.sum()` is on the accelerator: moved to where `scores` lives")]),
        # Where `other` lives is not shown: the copy proves nothing.
        ("scores = metric(x)", [(9, "MEDIUM", Status.ASSUMED, "`totals.sum()` is a tensor in code that uses a device; where it lives is not shown")]),
    ],
    ids=["follows-a-host-tensor", "follows-a-device-tensor", "follows-an-unknown-place"],
)
def test_a_copy_to_another_values_device_goes_where_that_value_lives(tmp_path, source, expected):
    code = f"""\
    import torch
    totals = torch.zeros(4)
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        {source}
        totals = totals.to(scores.device) + scores
        print(totals.sum().item())
    """
    assert reads(tmp_path, code) == expected
