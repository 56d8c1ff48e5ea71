"""Model shape, parameter count and FLOP formula of the reference decoder LM."""

from __future__ import annotations

import torch

from verifier.reference_impl.model import DecoderLM
from verifier.reference_impl.presets import PRESETS, get_preset


def build(name: str, device: str = "cpu") -> DecoderLM:
    preset = get_preset(name)
    with torch.device(device):
        return DecoderLM(preset.vocab_size, preset.d_model, preset.n_layers, preset.n_heads, preset.seq_len, preset.mlp_ratio)


def test_forward_returns_logits_per_position():
    model = build("tiny")
    logits = model(torch.zeros(2, 32, dtype=torch.long))
    assert logits.shape == (2, 32, 32)


def test_head_is_tied_to_the_token_embedding():
    model = build("tiny")
    assert model.head.weight is model.token_embedding.weight


def test_tiny_parameter_count_is_exact():
    # embeddings 32*32 + 32*32, per layer 2 norms (2*64) + qkv 32*96 + proj 32*32 + mlp 2*32*128,
    # final norm 64: 2048 + 2 * 12416 + 64.
    assert build("tiny").parameter_count() == 26944


def test_gpu_preset_has_over_100m_parameters():
    assert build("gpu", device="meta").parameter_count() > 100_000_000


def test_flops_per_token_follows_the_palm_convention():
    model = build("tiny")
    matmul = 2 * (32 * 96 + 32 * 32 + 2 * 32 * 128) + 32 * 32
    assert model.flops_per_token(32) == 6 * matmul + 12 * 2 * 32 * 32


def test_presets_are_named_by_their_keys():
    assert all(name == preset.name for name, preset in PRESETS.items())


def test_gpu_preset_shapes_check_out_on_the_meta_device():
    # Shapes only: the full gpu-preset forward and loss without allocating or computing.
    preset = get_preset("gpu")
    model = build("gpu", device="meta")
    tokens = torch.zeros(preset.batch_size, preset.seq_len, dtype=torch.long, device="meta")
    logits = model(tokens)
    assert logits.shape == (32, 1024, 8192)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    assert loss.shape == ()
