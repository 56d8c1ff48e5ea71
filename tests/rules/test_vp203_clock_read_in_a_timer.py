"""VP203: a clock read in a timer's method (`timer.tic()` / `timer.toc()`, the timer in another
module) times the loop that calls it: a synchronize there is the timing pattern (LOW), not a
blocking stall of training (HIGH)."""

from __future__ import annotations

import textwrap

from verifier.config import Settings
from verifier.static.runner import analyze_paths

TIMER = """\
import time

class Timer:
    def tic(self):
        self.start = time.perf_counter()

    def toc(self):
        self.total = time.perf_counter() - self.start
"""

BENCHMARK = """\
import torch
from timer import Timer

def compute_time_train(model, loss_fun, iters=30):
    inputs = torch.rand(8, 3, 224, 224).cuda()
    fw_timer = Timer()
    for cur_iter in range(iters):
        fw_timer.tic()
        loss = loss_fun(model(inputs))
        loss.backward()
        torch.cuda.synchronize()
        fw_timer.{stop}()
"""


def findings(tmp_path, stop, timer=TIMER):
    (tmp_path / "timer.py").write_text(timer)
    (tmp_path / "benchmark.py").write_text(textwrap.dedent(BENCHMARK.format(stop=stop)))
    result = analyze_paths([str(tmp_path)], Settings(select=("VP203",)))
    return [(f.path.rsplit("/", 1)[-1], f.line, f.severity.name) for f in result.findings]


def test_a_synchronize_timed_by_a_timer_of_another_module_is_the_timing_pattern(tmp_path):
    assert findings(tmp_path, "toc") == [("benchmark.py", 11, "LOW")]


def test_a_counter_that_reads_no_clock_times_nothing(tmp_path):
    counter = "class Timer:\n    def tic(self):\n        self.n = 0\n\n    def toc(self):\n        self.n += 1\n"
    assert findings(tmp_path, "toc", timer=counter) == [("benchmark.py", 11, "HIGH")]
