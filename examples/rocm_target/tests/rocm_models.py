"""The models the rocm target's tests compile, as CLI factories (`dynamo-mlir dump --target rocm
examples/rocm_target/tests/rocm_models.py:mlp`): each returns (model, example_inputs)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-norm transformer block: layernorm, self-attention (scaled_dot_product_attention),
    GELU MLP, residuals."""

    def __init__(self, hidden: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    return model.eval(), (torch.randn(8, 16),)


def transformer_block():
    torch.manual_seed(0)
    return Block().eval(), (torch.randn(2, 8, 64),)
