"""Regressions from reinforcement-learning scripts and diffusion trainers on real code.

An environment lives on the host: its observations and rewards arrive there every step and
must be copied up, and the chosen action must come back down. Neither copy is avoidable, so
neither is reported as a per-step stall; a tensor the device could have made itself still is.
Freeing the cache after a periodic validation run is housekeeping, not a per-step cost.
"""

from __future__ import annotations

import pytest

ROLLOUT = """\
import numpy as np
import torch

device = torch.device("cuda")
obs, _ = envs.reset()
for global_step in range(total_steps):
    q_values = q_net(torch.Tensor(obs).to(device))
    actions = torch.argmax(q_values, dim=1).cpu().numpy()
    next_obs, rewards, terminated, truncated, infos = envs.step(actions)
    reward_t = torch.tensor(rewards).to(device)
    noise = torch.rand((num_envs,)).to(device)
    loss = (q_values.max(1).values - reward_t + noise).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    weights = torch.tensor([0.5, 0.25]).to(device)
    obs = next_obs
"""


def test_action_read_for_the_environment_is_low(analyse):
    # The argmax is a device tensor, but the simulator needs it on the host every step.
    assert analyse(ROLLOUT, select=("VP201",)) == [("VP201", 8, "LOW")]


def test_inline_action_read_inside_the_environment_step_is_low(analyse):
    code = """\
    import torch
    device = "cuda"
    for step in range(num_steps):
        logits = policy(obs.to(device))
        action = torch.distributions.Categorical(logits=logits).sample()
        obs, reward, done, truncated, info = envs.step(action.argmax(-1).cpu().numpy())
        loss = -logits.mean()
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP201",)) == [("VP201", 6, "LOW")]


def test_environment_data_copied_up_is_not_a_host_factory(analyse):
    # `torch.tensor(rewards)` copies host data; `torch.rand(...)` and a constant list could
    # have been made on the device (or once).
    assert analyse(ROLLOUT, select=("VP104",)) == [("VP104", 11, "MEDIUM"), ("VP104", 16, "MEDIUM")]


def test_empty_cache_after_a_periodic_validation_is_quiet(analyse):
    code = """\
    import torch
    for step, batch in enumerate(train_loader):
        loss = model(batch.to("cuda")).mean()
        loss.backward()
        optimizer.step()
        if step % validation_steps == 0:
            pipeline = make_pipeline(model).to("cuda")
            images = [pipeline(prompt) for _ in range(4)]
            del pipeline
            torch.cuda.empty_cache()
        torch.cuda.empty_cache()
    """
    assert analyse(code, select=("VP403",)) == [("VP403", 11, "MEDIUM")]


EPOCH_VALIDATION = """\
import gc
import torch
for epoch in range(epochs):
    for batch in train_loader:
        loss = model(batch.to("cuda")).mean()
        loss.backward()
        optimizer.step()
    pipeline = make_pipeline(model).to("cuda")
    images = [pipeline(prompt) for _ in range(4)]
    {release}
    torch.cuda.empty_cache()
"""


@pytest.mark.parametrize("release", ["del pipeline", "pipeline = None", "gc.collect()"])
def test_empty_cache_right_after_a_release_once_per_epoch_is_quiet(analyse, release):
    assert analyse(EPOCH_VALIDATION.format(release=release), select=("VP403",)) == []


def test_empty_cache_once_per_epoch_without_a_release_is_low_and_after_one_every_step_medium(analyse):
    assert analyse(EPOCH_VALIDATION.format(release="print(len(images))"), select=("VP403",)) == [("VP403", 11, "LOW")]
    every_step = """\
    import torch
    for batch in train_loader:
        outputs = model(batch.to("cuda"))
        loss = outputs.mean()
        loss.backward()
        optimizer.step()
        del outputs
        torch.cuda.empty_cache()
    """
    assert analyse(every_step, select=("VP403",)) == [("VP403", 8, "MEDIUM")]


MEMORY_TRACER = """\
import gc
import torch


class MemoryTrace:
    def __enter__(self):
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc):
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
            {read}


for epoch in range(epochs):
    with MemoryTrace() as trace:
        for batch in train_loader:
            loss = model(batch.to("cuda")).mean()
            loss.backward()
            optimizer.step()
"""


def test_a_memory_tracer_used_once_per_epoch_is_quiet(analyse):
    # The release's branches start right after it; the peak reset in `__enter__` is read in `__exit__`.
    code = MEMORY_TRACER.format(read="self.peak = torch.cuda.max_memory_allocated()")
    assert analyse(code, select=("VP403",)) == []


def test_a_tracer_that_never_reads_its_peak_still_reports_the_reset(analyse):
    code = MEMORY_TRACER.format(read="self.end = torch.cuda.memory_allocated()")
    assert analyse(code, select=("VP403",)) == [("VP403", 10, "LOW")]


def test_a_release_before_a_loop_does_not_cover_the_loop_body(analyse):
    code = """\
    import gc
    import torch
    for epoch in range(epochs):
        gc.collect()
        for batch in train_loader:
            loss = model(batch.to("cuda")).mean()
            loss.backward()
            optimizer.step()
            torch.cuda.empty_cache()
    """
    assert analyse(code, select=("VP403",)) == [("VP403", 9, "MEDIUM")]


def test_sum_of_loss_terms_is_a_tensor_and_sum_of_lengths_a_number(analyse):
    code = """\
    import torch
    device = "cuda"
    for images, targets in train_loader:
        outputs = model(images.to(device, non_blocking=True))
        terms = criterion(outputs, targets)
        total = sum(terms[k] * weights[k] for k in terms)
        boxes = sum(len(t["labels"]) for t in targets)
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        logged = sum(terms.values()).item()
        print(f"{boxes} boxes")
    """
    assert analyse(code, select=("VP201",)) == [("VP201", 11, "LOW")]


def test_a_device_helper_call_is_a_copy_destination(analyse):
    # `dist_util.dev()` returns the rank's device: copying a loader batch there blocks.
    code = """\
    import torch
    import dist_util

    train_iter = iter(train_loader)
    for step in range(num_steps):
        images, extra = next(train_iter)
        labels = extra["y"].to(dist_util.dev())
        images = images.to(dist_util.dev(), non_blocking=True)
        cpu_copy = images.to(dist_util.cpu_device())
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
    """
    assert analyse(code, select=("VP102",)) == [("VP102", 7, "LOW")]


def test_loader_of_stored_prompts_has_nothing_to_load(analyse):
    # A dataset whose `__getitem__` only hands back stored values needs no workers or pinning;
    # one that reads and decodes images does.
    code = """\
    import torch
    from torch.utils.data import DataLoader, Dataset


    class Prompts(Dataset):
        def __init__(self, prompt, count):
            self.prompt, self.count = prompt, count

        def __len__(self):
            return self.count

        def __getitem__(self, index):
            return {"prompt": self.prompt, "index": index}


    class Images(Dataset):
        def __getitem__(self, index):
            return load_image(self.paths[index])


    prompts = Prompts("a photo of a dog", 200)
    prompt_loader = DataLoader(prompts, batch_size=4)
    image_loader = DataLoader(Images(), batch_size=4)
    model.to("cuda")
    """
    assert analyse(code, select=("VP103",)) == [("VP103", 23, "LOW")]
