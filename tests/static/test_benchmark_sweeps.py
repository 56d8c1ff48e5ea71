"""A loop that calls a benchmark's measuring routine once per configuration is a sweep: what the
routine does outside its timed loop runs once per configuration, not once per epoch."""

from __future__ import annotations

BENCHMARK = """\
import time
import torch


def benchmark(model_type, runs, device):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(device)
    model = build(model_type).to(device).eval()
    x = torch.randn(1, 3, 224, 224, device=device)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with torch.no_grad():
            model(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    torch.cuda.empty_cache()
    return sum(times) / runs


def main(device):
    for model_type in ["small", "base", "large"]:
        print(model_type, benchmark(model_type, 10, device))
"""


def test_the_set_up_of_each_measured_configuration_runs_once_per_configuration(analyse):
    # Only the timed loop's own synchronize is reported (it times launch plus sync).
    assert analyse(BENCHMARK) == [("VP203", 15, "LOW")]


def test_a_loop_around_a_function_that_trains_is_still_an_epoch_loop(analyse):
    code = BENCHMARK.replace("            model(x)\n", "            model(x).sum().backward()\n            optimizer.step()\n")
    code = code.replace("        with torch.no_grad():\n", "        if True:\n")
    # A training routine: the loop around it is an epoch loop, its set-up and clean-up per epoch.
    assert analyse(code) == [("VP203", 6, "LOW"), ("VP403", 7, "LOW"), ("VP203", 16, "LOW"), ("VP403", 18, "LOW")]
