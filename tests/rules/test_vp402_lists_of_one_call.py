"""VP402 reports a detached tensor or a Python value appended every step only into a list that
lives for the whole run. A local of a function lives that long only when the module's own code
calls the function once from its top level (directly or through functions called once); a
library class's method, or one called by methods nobody here calls, may run once per round, its
list summarised and dropped when it returns."""

from __future__ import annotations

SELECT = ("VP402",)

LEARNER = """\
import numpy as np
import torch


class Learner:
    def __init__(self, net, batches):
        self.net = net.cuda()
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)
        self.batches = batches

    def update(self):
        losses = []
        for x, y in self.batches:
            loss = torch.nn.functional.mse_loss(self.net(x.cuda()), y.cuda())
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
        return float(np.mean([l.item() for l in losses]))

    def round(self):
        return self.update()
{entry}
"""


def test_a_list_of_a_method_nobody_here_calls_from_the_top_lives_for_one_call(analyse):
    assert analyse(LEARNER.format(entry=""), select=SELECT) == []


def test_the_same_list_in_a_function_the_script_runs_once_lives_for_the_run(analyse):
    entry = '\n\nif __name__ == "__main__":\n    Learner(torch.nn.Linear(4, 1), []).round()'
    assert analyse(LEARNER.format(entry=entry), select=SELECT) == [("VP402", 18, "HIGH")]
