"""Reference models shared by the demo, the benchmarks and the tests."""

import torch
import torch.nn as nn


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))


def cnn() -> nn.Module:
    """conv-bn-relu-maxpool x2, then linear; input (batch, 3, 32, 32)."""
    def stage(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

    return nn.Sequential(*stage(3, 16), *stage(16, 32), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))


class TransformerBlock(nn.Module):
    """Pre-norm block: multi-head self-attention + MLP, each with layer norm and a residual."""

    def __init__(self, hidden: int = 64, heads: int = 4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def transformer_block() -> nn.Module:
    return TransformerBlock()


def randomize_batchnorm(model: nn.Module) -> nn.Module:
    """Non-trivial running statistics, so inference batch-norm is really exercised."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    return model
