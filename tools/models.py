"""Reference models shared by the demo, the benchmarks and the tests."""

import importlib
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))


def cnn(stages: int = 2, image: int = 32) -> nn.Module:
    """conv-bn-relu-maxpool x `stages` (16, 32, 64, ... channels), then linear; input (batch, 3, image, image)."""
    def stage(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

    channels = [3] + [16 << i for i in range(stages)]
    layers = [layer for cin, cout in zip(channels, channels[1:]) for layer in stage(cin, cout)]
    side = image >> stages
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels[-1] * side * side, 10))


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


# Hugging Face transformers architectures from small configs, random weights, dropout off (so that
# compiled and eager runs compare value by value): name -> (model class, config class, config of
# (width, layers, vocab, positions)). Heads: 4; MLP width: 2 x width (GPT-2: its default, 4 x).
_HEADS = 4


def _gpt2(w, layers, vocab, positions):
    return dict(vocab_size=vocab, n_positions=positions, n_embd=w, n_layer=layers, n_head=_HEADS, resid_pdrop=0.0,
                embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False, bos_token_id=vocab - 1, eos_token_id=vocab - 1)


def _bert(w, layers, vocab, positions):
    return dict(vocab_size=vocab, hidden_size=w, num_hidden_layers=layers, num_attention_heads=_HEADS,
                intermediate_size=2 * w, max_position_embeddings=positions, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0)


def _decoder(kv_heads):
    def config(w, layers, vocab, positions):
        return dict(vocab_size=vocab, hidden_size=w, intermediate_size=2 * w, num_hidden_layers=layers,
                    max_position_embeddings=positions, attention_dropout=0.0, use_cache=False,
                    tie_word_embeddings=False, num_attention_heads=_HEADS, num_key_value_heads=kv_heads)
    return config


def _t5(w, layers, vocab, positions):
    return dict(vocab_size=vocab, d_model=w, d_kv=w // _HEADS, d_ff=2 * w, num_layers=layers, num_heads=_HEADS,
                dropout_rate=0.0, use_cache=False)


def _vit(w, layers, vocab, positions):  # 16x16 images in 4x4 patches, 10 classes
    return dict(hidden_size=w, num_hidden_layers=layers, num_attention_heads=_HEADS, intermediate_size=2 * w,
                image_size=16, patch_size=4, num_labels=10, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


HF_MODELS = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", _gpt2),
    "bert": ("BertForMaskedLM", "BertConfig", _bert),
    "llama": ("LlamaForCausalLM", "LlamaConfig", _decoder(kv_heads=_HEADS)),
    # Grouped-query attention: 2 key/value heads shared by the 4 query heads.
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", _decoder(kv_heads=2)),
    "t5": ("T5ForConditionalGeneration", "T5Config", _t5),
    "vit": ("ViTForImageClassification", "ViTConfig", _vit),
}


def hf_model(name: str, width: int = 64, layers: int = 2, vocab: int = 1000, positions: int = 64,
             attn_implementation: str | None = None) -> nn.Module:
    """A transformers model of HF_MODELS with random weights; attn_implementation None is
    transformers' default (SDPA). transformers (the `test` extra) is imported only here."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random weights only: nothing may be fetched
    transformers = importlib.import_module("transformers")
    model_cls, config_cls, config = HF_MODELS[name]
    cfg = getattr(transformers, config_cls)(**config(width, layers, vocab, positions),
                                            attn_implementation=attn_implementation)
    return getattr(transformers, model_cls)(cfg)
