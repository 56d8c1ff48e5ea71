"""A function reads its module's globals: `log_step()` defined above a script's training loop
reads the `loss` the loop binds, whichever binding ran last. When every module-level binding of
the name agrees on a fact (a tensor on the accelerator), the function's reads start from it, as
they do where the same lines are written in the loop; any other binding (a number, a `global`
statement in a function, a local binding of the name) leaves it unknown."""

from __future__ import annotations

import pytest

SCRIPT = """\
import torch

model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []


def log_step():
{helper}


for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).sum()
    loss.backward()
    opt.step()
    log_step()
{after}
"""

PROBES = """\
    loss.item()
    float(loss)
    history.append(loss)
    torch.cuda.synchronize()"""

INLINE = """\
import torch

model = torch.nn.Linear(4, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
history = []


for step in range(100):
    x = torch.randn(8, 4, device="cuda")
    loss = model(x).sum()
    loss.backward()
    opt.step()
    loss.item()
    float(loss)
    history.append(loss)
    torch.cuda.synchronize()
"""

# The same four reads, inlined and in the helper: same codes and severities, lines mapped.
_SAME_FOUR = [("VP201", 9, "MEDIUM"), ("VP202", 10, "LOW"), ("VP402", 11, "HIGH"), ("VP203", 12, "LOW")]


def test_the_probes_inlined(analyse):
    assert analyse(INLINE) == [("VP201", 13, "MEDIUM"), ("VP202", 14, "LOW"), ("VP402", 15, "HIGH"), ("VP203", 16, "LOW")]


def test_a_helper_reading_the_loops_global_finds_what_the_inlined_lines_find(analyse):
    assert analyse(SCRIPT.format(helper=PROBES, after="")) == _SAME_FOUR


@pytest.mark.parametrize(
    ("helper", "after"),
    [
        # Another module-level binding puts a number there: the global may be either.
        (PROBES, "loss = 0.0"),
        # A function may rebind it to anything.
        (PROBES, "def reset():\n    global loss\n    loss = None"),
    ],
    ids=["rebound-to-a-number", "a-global-statement-elsewhere"],
)
def test_a_global_whose_bindings_disagree_is_not_known(analyse, helper, after):
    found = analyse(SCRIPT.format(helper=helper, after=after))
    assert ("VP201", 9, "LOW") in found
    assert [f for f in found if f[0] in ("VP202", "VP402")] == []


def test_a_name_the_function_binds_is_its_own_not_the_modules(analyse):
    """`loss = compute()` anywhere in the function makes `loss` local there (before the binding too)."""
    helper = "    if step > 0:\n        float(loss)\n    loss = helper_value()"
    assert [f for f in analyse(SCRIPT.format(helper=helper, after="")) if f[1] < 13] == []


def test_a_class_attribute_of_the_same_name_does_not_disagree(analyse):
    """`loss = 0.0` in a class body is the class's attribute, not a binding of the global."""
    after = "class Meter:\n    loss = 0.0"
    assert analyse(SCRIPT.format(helper=PROBES, after=after)) == _SAME_FOUR


def test_a_closure_reads_its_enclosing_function_not_the_module(analyse):
    """A function nested in another may read the enclosing function's `loss`: no global fact."""
    code = """\
        import torch

        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)


        def train(data):
            loss = 0.0

            def show():
                float(loss)

            for x in data:
                show()
                out = model(x.cuda()).sum()
                out.backward()
                opt.step()


        for step in range(10):
            loss = model(torch.randn(8, 4, device="cuda")).sum()
    """
    assert [f for f in analyse(code) if f[0] == "VP201"] == []


def test_a_loaders_batch_read_as_a_global_is_still_a_batch(analyse):
    """The loop's `data` is a loader's batch (what the binding says) before it is a host tensor
    (what the walk shows): a helper that copies it blocks as the inlined copy does."""
    code = """\
        import torch

        device = torch.device("cuda")
        model = torch.nn.Linear(4, 1).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = torch.utils.data.DataLoader([], num_workers=2, pin_memory=True, persistent_workers=True)


        def train_step():
            inputs = data[0].to(device)
            model(inputs).sum().backward()
            opt.step()


        for epoch in range(10):
            for i, data in enumerate(loader, 0):
                train_step()
    """
    assert analyse(code, select=("VP102",)) == [("VP102", 10, "LOW")]
