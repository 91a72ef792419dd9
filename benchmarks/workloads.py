"""Inference workloads of bench_models.py: the models, the kernel cases and the one-op graphs.

Every workload is a callable and its inputs, built on the device asked for, from seed 0. The
models are those of dynamo_mlir.tools.models (the transformers ones also serve
tests/real_models.py, there 64 wide): eval mode, random weights, nothing downloaded.
"""

import importlib.util
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from dynamo_mlir.tools.models import cnn, hf_model, mlp, randomize_batchnorm

# Tolerances of mlir's output against eager's: the models' are tests/real_models.py's inference
# tolerances; the kernel cases reduce over up to 1024 (and 144) elements per output.
MODEL_TOL = dict(rtol=1e-4, atol=1e-5)
KERNEL_TOL = dict(rtol=1e-4, atol=1e-4)
VOCAB, TOKENS = 1000, (2, 64)  # the transformers models: vocab 1000, 2 sequences of 64 tokens
WIDTH = 128                    # their hidden size (2 layers each)
# transformers is the `test` extra: without it (a bare device machine) its models are left out.
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


@dataclass
class Inference:
    fn: Callable
    inputs: tuple
    group: str  # "models", "kernels" or "overhead": the table it is reported in
    tol: dict = field(default_factory=lambda: dict(KERNEL_TOL))


class Logits(nn.Module):
    """A transformers model called with positional tensors (named by `keys`) and returning its
    logits: what is timed and compared, without the output dataclass around it."""

    def __init__(self, model: nn.Module, *keys: str):
        super().__init__()
        self.model, self.keys = model, keys

    def forward(self, *inputs):
        return self.model(**dict(zip(self.keys, inputs))).logits


def tokens(g: torch.Generator) -> torch.Tensor:
    return torch.randint(0, VOCAB, TOKENS, generator=g)


def padding_mask() -> torch.Tensor:
    """Sequence 1's last 16 tokens are padding (BERT's attention mask)."""
    mask = torch.ones(TOKENS, dtype=torch.long)
    mask[1, -16:] = 0
    return mask


def small_transformer(name: str) -> nn.Module:
    """The models table's transformers model `name` (2 layers of WIDTH, vocabulary VOCAB)."""
    return hf_model(name, width=WIDTH, vocab=VOCAB, positions=TOKENS[1])


def _models(g):
    hf = small_transformer
    table = {
        "mlp": (mlp(), (torch.randn(64, 10, generator=g),)),
        "cnn": (randomize_batchnorm(cnn(stages=3, image=64)), (torch.randn(8, 3, 64, 64, generator=g),)),
    }
    if HAVE_TRANSFORMERS:
        table |= {
            "gpt2": (Logits(hf("gpt2"), "input_ids"), (tokens(g),)),
            "bert": (Logits(hf("bert"), "input_ids", "attention_mask"), (tokens(g), padding_mask())),
            "llama": (Logits(hf("llama"), "input_ids"), (tokens(g),)),
        }
    return table


def _elementwise_chain(x):
    return torch.tanh(torch.exp(x * 0.5) + 1.0) * x


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _conv(x, w, b):
    return F.conv2d(x, w, b, padding=1)


def _add(x, y):
    return x + y


def _kernels(g):
    r = lambda *shape: torch.randn(*shape, generator=g)
    return {
        "softmax_4096x1024": (_softmax, (r(4096, 1024),)),
        "layernorm_4096x1024": (_layernorm, (r(4096, 1024), r(1024), r(1024))),
        "elementwise_4M": (_elementwise_chain, (r(4 * 1024 * 1024),)),
        "matmul_512": (torch.mm, (r(512, 512), r(512, 512))),
        "conv3x3_8x16x64x64_to_32": (_conv, (r(8, 16, 64, 64), r(32, 16, 3, 3) / 12, r(32))),
    }


def _one_op_graphs(g):
    """Graphs of one small op: their time per call is the backend's overhead per call."""
    r = lambda *shape: torch.randn(*shape, generator=g)
    return {
        "add_64x256": (_add, (r(64, 256), r(64, 256))),
        "layernorm_64x256": (_layernorm, (r(64, 256), r(256), r(256))),
    }


def inference_workloads(device: str) -> dict[str, Inference]:
    """name -> Inference on `device`, the models first (the transformers ones in eval mode)."""
    torch.manual_seed(0)  # the models' weights
    g = torch.Generator().manual_seed(0)
    groups = {"models": (_models(g), MODEL_TOL), "kernels": (_kernels(g), KERNEL_TOL),
              "overhead": (_one_op_graphs(g), KERNEL_TOL)}
    return {name: Inference(fn.to(device).eval() if isinstance(fn, nn.Module) else fn,
                            tuple(x.to(device) for x in xs), group, dict(tol))
            for group, (table, tol) in groups.items() for name, (fn, xs) in table.items()}
