"""Which training loop of each real-code repository receives the probes.

Repositories, mirrors and pinned commits come from `../verdicts.json`; this table only says
which file (and, where the file has several loops or the finder cannot see the backward, which
line) to use. Every entry was checked by reading the loop at the pinned commit; the note says
what it is. `scope` narrows what verify-perf analyses where a whole repository would make a run
slow; the new helper module is always added to it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

VERDICTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verdicts.json")


@dataclass(frozen=True)
class Repository:
    name: str
    mirror: str
    commit: str


def load_repositories(verdicts: str = VERDICTS) -> dict[str, Repository]:
    """owner/name -> the mirror folder and pinned commit the real-code sets use."""
    with open(verdicts, encoding="utf-8") as handle:
        doc = json.load(handle)
    return {r["name"]: Repository(r["name"], r["mirror"], r["commit"]) for r in doc["repos"]}


@dataclass(frozen=True)
class Target:
    repo: str
    path: str
    note: str
    line: int | None = None       # the anchor statement's line, when the finder's choice is not unique
    subject: str | None = None    # the loss to read, when the anchor's own argument is not a name
    scope: tuple[str, ...] = (".",)

    @property
    def label(self) -> str:
        return f"{self.repo}:{self.path}"


TARGETS: tuple[Target, ...] = (
    Target("karpathy/nanoGPT", "train.py",
           "module-level `while True` step loop; backward in the gradient-accumulation loop"),
    Target("karpathy/minGPT", "mingpt/trainer.py",
           "Trainer.run: `while True` loop, `self.loss.backward()` then clip and step"),
    Target("pytorch/examples", "mnist/main.py", "train(): loop over the loader, backward then step",
           scope=("mnist",)),
    Target("pytorch/examples", "imagenet/main.py", "train(): loop over the loader, backward then step",
           scope=("imagenet",)),
    Target("pytorch/examples", "word_language_model/main.py",
           "train(): loop over bptt windows, backward then clip and a manual or optimizer step",
           scope=("word_language_model",)),
    Target("pytorch/examples", "dcgan/main.py",
           "module-level epoch and batch loops; the generator's backward (the last of three)",
           line=257, scope=("dcgan",)),
    # The whole repository costs 31 s a run against 2 s for the script, and at 591832f gave the
    # same findings in train.py and the helper module (`--whole-repositories` checks it again).
    Target("huggingface/pytorch-image-models", "train.py",
           "train_one_epoch(): the backward runs in the local `_backward(loss)` closure; the anchor is "
           "its call on the usual path (no naflex, no no_sync)",
           line=1382, subject="loss", scope=("train.py",)),
    Target("milesial/Pytorch-UNet", "train.py",
           "train_model(): loop over the loader inside a tqdm block, scaled backward then step"),
    Target("ultralytics/yolov5", "train.py",
           "train(): loop over batches, scaled backward, a step every `accumulate` batches"),
    Target("jaywalnut310/vits", "train.py",
           "train_and_evaluate(): GAN step; the generator's scaled backward (the second of two)",
           line=190),
    Target("lucidrains/denoising-diffusion-pytorch", "denoising_diffusion_pytorch/denoising_diffusion_pytorch.py",
           "Trainer.train(): gradient-accumulation loop inside the step loop, accelerator.backward(loss)"),
    Target("facebookresearch/dlrm", "dlrm_s_pytorch.py",
           "run(): loop over the training loader, `E.backward()` inside a record_function block"),
    Target("KellerJordan/modded-nanogpt", "train_gpt.py",
           "module-level training section: the gradient-accumulation loop of the main step loop "
           "(the first backward is the warm-up's)",
           line=2362, scope=("train_gpt.py", "triton_kernels.py", "dc_triton_kernels.py")),
    Target("Lightning-AI/litgpt", "litgpt/pretrain.py",
           "fit(): loop over the data iterator; `fabric.backward(loss / accumulation)`, probes read `loss`",
           line=355, subject="loss", scope=("litgpt",)),
    Target("huggingface/accelerate", "examples/nlp_example.py",
           "training_function(): loop over batches, accelerator.backward(loss)", scope=("examples",)),
    Target("huggingface/accelerate", "examples/complete_nlp_example.py",
           "training_function(): loop over batches, accelerator.backward(loss), checkpointing by step",
           scope=("examples",)),
)
