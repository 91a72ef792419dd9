"""Reference models shared by the demo, the benchmarks and the tests."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class TinyGPT(nn.Module):
    """GPT-2 shaped (2 layers, n_embd 128, 4 heads, causal attention, tanh GELU), random weights."""

    def __init__(self, vocab=256, ctx=32, d=128, heads=4, layers=2):
        super().__init__()
        self.wte, self.wpe, self.heads = nn.Embedding(vocab, d), nn.Embedding(ctx, d), heads
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
            ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d), out=nn.Linear(4 * d, d))) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def attention(self, b, x):
        B, T, C = x.shape
        q, k, v = b["qkv"](x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        return b["proj"]((att @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = x + self.attention(b, b["ln1"](x))
            x = x + b["out"](F.gelu(b["fc"](b["ln2"](x)), approximate="tanh"))
        return self.head(self.ln_f(x))
