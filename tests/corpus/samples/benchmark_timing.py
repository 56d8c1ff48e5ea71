"""Micro-benchmarks for the attention block: how the team times forward passes."""

import statistics
import subprocess
import time

import torch as t


def time_forward_naive(model, x, iters=100, warmup=10):
    for _ in range(warmup):
        model(x)
    timings = []
    for _ in range(iters):
        t.cuda.synchronize()  # expect: VP203[LOW]
        start = time.perf_counter()
        model(x)
        t.cuda.synchronize()  # expect: VP203[LOW]
        timings.append(time.perf_counter() - start)
    return statistics.median(timings) * 1e3


def time_forward_events(model, x, iters=100, dtype=t.bfloat16):
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    with t.autocast("cuda", dtype=dtype), t.inference_mode():
        for _ in range(10):
            model(x)
        start.record()
        for _ in range(iters):
            model(x)
        end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def measure_peak_memory(model, batch_sizes, seq_len, dim, device="cuda"):
    peaks = {}
    for batch_size in batch_sizes:
        x = t.randn(batch_size, seq_len, dim, device=device)
        t.cuda.reset_peak_memory_stats()
        with t.inference_mode():
            model(x)
        peaks[batch_size] = t.cuda.max_memory_allocated() / 2**20
    return peaks


def gpu_utilisation_during(model, x, iters=200):
    readings = []
    for i in range(iters):
        model(x)
        query = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
        out = subprocess.run(query, capture_output=True, text=True)  # expect: VP204[MEDIUM]  (a benchmark loop: its per-iteration frequency is inferred, not shown)
        readings.append(int(out.stdout.strip()))
    return statistics.mean(readings)


def benchmark_throughput(model, loader, steps=50):
    t.cuda.synchronize()
    started = time.perf_counter()
    seen = 0
    for step, (x, _) in enumerate(loader):
        if step == steps:
            break
        model(x.cuda(non_blocking=True))
        seen += x.size(0)
    t.cuda.synchronize()
    return seen / (time.perf_counter() - started)


def profile_steps(model, x, iters=20):
    with t.profiler.profile(activities=[t.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            model(x)
            t.cuda.synchronize()  # verify-perf: ignore[VP203] step boundaries in the trace
            prof.step()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=10)
