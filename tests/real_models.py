"""Small real models for tests/test_real_models.py: Hugging Face transformers architectures built
from small configs with random weights (nothing downloaded), a ResNet-style CNN and the MLP.

Every model has dropout off, so that compiled and eager runs are comparable value by value.
A `Case` builds the model and one fixed batch: the model's inputs, the name of its main output
(compared in inference) and a training target with the loss that uses it.
"""

import os
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random weights only: nothing may be fetched

import torch
import torch.nn as nn
import torch.nn.functional as F
import transformers

from dynamo_mlir.tools.models import mlp, randomize_batchnorm

VOCAB, BATCH, SEQ = 1000, 2, 16


@dataclass
class Case:
    build: Callable[[str | None], nn.Module]  # attn_implementation (None: the default, SDPA)
    batch: Callable[[torch.Generator], tuple[dict, torch.Tensor]]  # (model inputs, target)
    output: str | None  # attribute of the model's output compared in inference; None: the output
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    transformer: bool = True  # has an attn_implementation to choose


def _hf(model_cls, config_cls, **config):
    def build(attn_implementation):
        cfg = config_cls(**config, attn_implementation=attn_implementation)
        return model_cls(cfg)

    return build


def _tokens(g, *shape):
    return torch.randint(0, VOCAB, shape, generator=g)


def _causal_lm_batch(g):
    ids = _tokens(g, BATCH, SEQ)
    return {"input_ids": ids}, ids.roll(-1, dims=1)  # predict the next token (wrapping around)


def _padded_batch(g):
    """Row 1 is padded: its last 5 tokens are masked out and ignored by the loss."""
    ids = _tokens(g, BATCH, SEQ)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -5:] = 0
    return {"input_ids": ids, "attention_mask": mask}, ids.masked_fill(mask == 0, -100)


def _seq2seq_batch(g):
    ids, labels = _tokens(g, BATCH, SEQ), _tokens(g, BATCH, SEQ // 2)
    start = torch.zeros(BATCH, 1, dtype=torch.long)  # T5's decoder_start_token_id is the pad id, 0
    return {"input_ids": ids, "decoder_input_ids": torch.cat([start, labels[:, :-1]], 1)}, labels


def _image_batch(g, classes=10):
    return {"pixel_values": torch.randn(BATCH, 3, 16, 16, generator=g)}, torch.randint(0, classes, (BATCH,), generator=g)


def _token_loss(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


_DECODER = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                max_position_embeddings=64, attention_dropout=0.0, use_cache=False, tie_word_embeddings=False)


class ResNetCNN(nn.Module):
    """Stem conv-bn-relu, two residual blocks (conv-bn-relu-conv-bn + skip, relu; the second
    downsamples with a 1x1 conv-bn on the skip path), global average pool, linear."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.blocks = nn.Sequential(self.Block(16, 16, 1), self.Block(16, 32, 2))
        self.head = nn.Linear(32, classes)

    def forward(self, pixel_values):
        return self.head(self.blocks(self.stem(pixel_values)).mean(dim=(2, 3)))


CASES = {
    "gpt2": Case(
        _hf(transformers.GPT2LMHeadModel, transformers.GPT2Config, vocab_size=VOCAB, n_positions=64, n_embd=64,
            n_layer=2, n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
            bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1),
        _causal_lm_batch, "logits", _token_loss),
    "bert": Case(
        _hf(transformers.BertForMaskedLM, transformers.BertConfig, vocab_size=VOCAB, hidden_size=64,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        _padded_batch, "logits", _token_loss),
    "llama": Case(
        _hf(transformers.LlamaForCausalLM, transformers.LlamaConfig, **_DECODER, num_attention_heads=4,
            num_key_value_heads=4),
        _causal_lm_batch, "logits", _token_loss),
    # Grouped-query attention (2 key/value heads shared by 4 query heads) with rotary embeddings.
    "qwen2": Case(
        _hf(transformers.Qwen2ForCausalLM, transformers.Qwen2Config, **_DECODER, num_attention_heads=4,
            num_key_value_heads=2),
        _causal_lm_batch, "logits", _token_loss),
    "t5": Case(
        _hf(transformers.T5ForConditionalGeneration, transformers.T5Config, vocab_size=VOCAB, d_model=64, d_kv=16,
            d_ff=128, num_layers=2, num_heads=4, dropout_rate=0.0, use_cache=False),
        _seq2seq_batch, "logits", _token_loss),
    "vit": Case(
        _hf(transformers.ViTForImageClassification, transformers.ViTConfig, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, image_size=16, patch_size=4, num_labels=10,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        _image_batch, "logits", F.cross_entropy),
    # Non-trivial running statistics, so that inference's batch norm is really exercised.
    "resnet": Case(lambda _: randomize_batchnorm(ResNetCNN()), _image_batch, None, F.cross_entropy, transformer=False),
    "mlp": Case(lambda _: mlp(), lambda g: ({"input": torch.randn(BATCH * 8, 10, generator=g)},
                                            torch.randn(BATCH * 8, 1, generator=g)),
                None, F.mse_loss, transformer=False),
}
