"""A run that reuses the results cache says exactly what a cold run of the same tree says.

Random edit sequences (a comment, a synchronising call, a deleted line, a renamed name, a new
function, a new file) are applied to a small project of several modules whose heat crosses
imports; after every edit the cached run's findings (traces, evidence and suppressed findings
included) must equal those of a run without any cache. A cache that kept a stale project fact
would show here as a finding that differs, or that only one of the two runs reports.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from verifier.config import Settings
from tests.realcode.random_edits import edit
from verifier.static.runner import analyze_paths

PROJECT = {
    "train.py": """\
        import argparse

        import torch

        from helpers import log_loss, to_device
        from model import Net

        parser = argparse.ArgumentParser()
        parser.add_argument("--log-every", type=int, default=1)
        args = parser.parse_args()


        def train_step(model, optimizer, batch):
            x = to_device(batch, "cuda")
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            return loss


        def main(loader, optimizer):
            model = Net().cuda()
            history = []
            for step, batch in enumerate(loader):
                loss = train_step(model, optimizer, batch)
                if step % args.log_every == 0:
                    log_loss(loss)
                history.append(loss)
        """,
    "helpers.py": """\
        import torch


        def to_device(batch, device):
            return batch.to(device)


        def log_loss(loss):
            print(f"loss {loss.item():.3f}")
            torch.cuda.synchronize()
        """,
    "model.py": """\
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                scale = torch.ones(8).cuda()
                return self.fc(x) * scale
        """,
}

NEW_FILE = """\
from helpers import log_loss


def again(loader):
    for batch in loader:
        log_loss(batch)
"""


def write_project(root: Path) -> None:
    for name, code in PROJECT.items():
        (root / name).write_text(textwrap.dedent(code), encoding="utf-8")


def everything(result) -> list:
    return [(f.path, f, tuple(f.heat_trace), tuple(f.evidence)) for f in result.findings] + [
        ("suppressed", f) for r in result.files for f in r.suppressed
    ]


@pytest.mark.parametrize("seed", range(4))
def test_cached_runs_equal_cold_runs_through_random_edits(tmp_path, seed):
    root = tmp_path / "project"
    root.mkdir()
    write_project(root)
    cached = Settings(cache_dir=str(tmp_path / "cache"))
    cold = Settings()
    rng = random.Random(seed)
    assert everything(analyze_paths([str(root)], cached)) == everything(analyze_paths([str(root)], cold))
    done, seen = [], set()
    for n in range(8):
        done.append(edit(root, rng, n, new_file=NEW_FILE))
        reused, fresh = analyze_paths([str(root)], cached), analyze_paths([str(root)], cold)
        assert everything(reused) == everything(fresh), f"after {done}"
        seen.add(repr([(f.path, f.line, f.code, f.severity) for f in fresh.findings]))
    # The edits changed what the analysis reports (else the cache was only ever asked the same).
    assert len(seen) > 1
