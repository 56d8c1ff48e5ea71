"""A small GPT-style decoder-only language model: pre-norm blocks, causal SDPA, tied head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention through `scaled_dot_product_attention` (flash/mem-efficient
    kernels on CUDA, so the T x T score matrix is never stored)."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, time, width = x.shape
        q, k, v = (
            self.qkv(x)
            .view(batch, time, 3, self.n_heads, width // self.n_heads)
            .permute(2, 0, 3, 1, 4)
        )
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(attended.transpose(1, 2).reshape(batch, time, width))


class MLP(nn.Module):
    def __init__(self, d_model: int, ratio: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, ratio * d_model, bias=False)
        self.down = nn.Linear(ratio * d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.mlp_norm = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, mlp_ratio)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class DecoderLM(nn.Module):
    """Token + learned position embeddings, `n_layers` blocks, final norm, head tied to the
    token embedding. Returns logits of shape (batch, time, vocab)."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        n_layers: int,
        n_heads: int,
        max_seq_len: int,
        mlp_ratio: int = 4,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.n_layers = n_layers
        self.max_seq_len = max_seq_len
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, mlp_ratio) for _ in range(n_layers))
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.head.weight = self.token_embedding.weight
        self.apply(_init_weights)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # Slicing the position table avoids building an index tensor every step.
        x = self.token_embedding(tokens) + self.position_embedding.weight[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @staticmethod
    def count_parameters(vocab_size: int, d_model: int, n_layers: int, max_seq_len: int, mlp_ratio: int = 4) -> int:
        """`parameter_count()` of a model of this shape, without building it: two embeddings (the
        head is tied), per block two LayerNorms, qkv, projection and the MLP, and the final norm."""
        block = 2 * 2 * d_model + (3 + 1 + 2 * mlp_ratio) * d_model * d_model
        return (vocab_size + max_seq_len) * d_model + n_layers * block + 2 * d_model

    def flops_per_token(self, seq_len: int) -> int:
        """Training FLOPs per token (forward + backward), PaLM appendix B convention:
        6 x (matmul parameters, the tied head counted once) + 12 x layers x seq_len x d_model
        for attention scores and values. Embedding lookups and norms are not counted."""
        matmul_params = sum(
            p.numel() for name, p in self.named_parameters() if name.endswith(("qkv.weight", "proj.weight", "up.weight", "down.weight"))
        )
        matmul_params += self.vocab_size * self.d_model
        return 6 * matmul_params + 12 * self.n_layers * seq_len * self.d_model


def _init_weights(module: nn.Module) -> None:
    # GPT-2 style small-normal init keeps early logits near uniform, so the loss starts at ln(vocab).
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
