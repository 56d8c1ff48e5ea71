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


SETTINGS_SWEEP = """\
import torch


def check_hook(hook, wrapper, options):
    model = build(hook, wrapper, **options).cuda()
    out = model(torch.randn(40, 20, device="cuda"))
    out.mean().backward()
    torch.cuda.synchronize()
    return out.sum().item()


def main():
    for hook, wrapper, options in {iterated}:
        check_hook(hook, wrapper, options)
"""


def test_a_loop_over_listed_settings_runs_one_whole_run_per_setting(analyse):
    listed = "[(NO, NO, {}), (FP16, NO, {}), (POWER_SGD, BF16, {'rank': 2})]"
    # Each setting is a run of its own: what the runner does is once per setting, not per step.
    assert analyse(SETTINGS_SWEEP.format(iterated=listed), select=("VP201", "VP203")) == [("VP203", 8, "LOW")]
    # Over a data source the same body is the training step.
    found = analyse(SETTINGS_SWEEP.format(iterated="loader"), select=("VP201", "VP203"))
    assert found == [("VP203", 8, "LOW"), ("VP201", 9, "MEDIUM")]
