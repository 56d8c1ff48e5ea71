"""VP404: an evaluation without `no_grad` that a training script makes once (the final test pass
after training, at its top level or in a function its top level calls once) records one graph
per test batch once per run: LOW. One inside the epoch loop, in a function whose callers are not
shown (it may run every epoch), or in an evaluation script (its one pass is all its work) is
MEDIUM as before."""

from __future__ import annotations

SELECT = ("VP404",)

SCRIPT = """\
import torch

model = torch.nn.Linear(4, 1).cuda()
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(200):
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
{evaluation}
"""

FINAL = """
model.eval()
cost = 0
for x, y in test_loader:
    cost = cost + torch.mean((model(x.cuda()) - y.cuda()) ** 2)
print(cost.item())
"""


def test_the_final_test_pass_at_the_top_level_is_low(analyse):
    assert analyse(SCRIPT.format(evaluation=FINAL), select=SELECT) == [("VP404", 15, "LOW")]


def test_an_evaluation_every_epoch_is_medium(analyse):
    every_epoch = "\n".join("    " + line if line else line for line in FINAL.splitlines())
    assert analyse(SCRIPT.format(evaluation=every_epoch), select=SELECT) == [("VP404", 15, "MEDIUM")]


def test_a_test_function_the_script_calls_once_is_low_and_one_nobody_calls_medium(analyse):
    function = "\n\ndef test(model, test_loader):" + "\n".join("    " + line if line else line for line in FINAL.splitlines())
    called = SCRIPT.format(evaluation=function + "\n\ntest(model, test_loader)\n")
    assert analyse(called, select=SELECT) == [("VP404", 17, "LOW")]
    assert analyse(SCRIPT.format(evaluation=function), select=SELECT) == [("VP404", 17, "MEDIUM")]


def test_an_evaluation_scripts_one_pass_is_medium(analyse):
    script = "import torch\n\nmodel = torch.nn.Linear(4, 1).cuda()\n" + FINAL
    assert analyse(script, select=SELECT) == [("VP404", 8, "MEDIUM")]
