"""Workloads at the sizes and precisions people run (bench_models.py --scale): transformers
models from their published configurations with random weights, nothing downloaded.

On cuda (one GPU):
  gpt2_small_fp32      GPT-2 small (12 layers of 768), float32, batch 8 x 512 tokens
  bert_base_fp32       BERT-base, float32, 16 x 128 tokens, the last 32 of every other row padding
  llama_1b_bf16        a LLaMA-class 1B (hidden 2048, 16 layers, 32 query / 8 key-value heads,
                       MLP 5632, vocab 32000), bfloat16, 4 x 512 tokens
  vit_b16_fp32         ViT-B/16, float32, batch 32 of 224 x 224
  resnet50_fp32        ResNet-50, float32, batch 32 of 224 x 224
  train_resnet50_amp   a ResNet-50 training step (SGD), autocast bf16, batch 32
  train_gpt2_amp       a GPT-2 small training step (AdamW), autocast bf16, 8 x 512

Accuracy, as PyTorch's benchmark suite judges it: a float64 copy of the model (float64 inputs,
no autocast) is the reference; mlir's root-mean-square error against it must be at most
ACCURACY_RATIO times eager's. For a training step: the loss and the gradients of one step from
the same weights, each judged so.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from train_workloads import Training
from workloads import Inference, Logits

ACCURACY_RATIO = 3.0


@dataclass
class ScaleInference(Inference):
    """An inference workload judged against a float64 copy of `fn` (a module) run on float64
    copies of the inputs; flops: per call, for a TFLOP/s column (the GEMM table)."""

    flops: float = 0.0


@dataclass
class ScaleTraining(Training):
    """A training step judged against a float64 copy (loss and gradients of one step)."""


class Autocast(nn.Module):
    """`model` run under torch.autocast (the AMP recipe: float32 weights, half compute where
    autocast casts). A float64 copy is left alone: autocast never casts float64 tensors."""

    def __init__(self, model: nn.Module, dtype: torch.dtype):
        super().__init__()
        self.model, self.dtype = model, dtype

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, dtype=self.dtype):
            return self.model(x)


def _transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    return transformers


def _gpt2():
    t = _transformers()
    return t.GPT2LMHeadModel(t.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False))


def _bert():
    t = _transformers()
    return t.BertForMaskedLM(t.BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def _llama_1b():
    t = _transformers()
    cfg = t.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=32,
                        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=2048, use_cache=False,
                        tie_word_embeddings=False)
    return t.LlamaForCausalLM(cfg)


def _vit_b16():
    t = _transformers()
    return t.ViTForImageClassification(t.ViTConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=1000))


def _resnet50():
    t = _transformers()
    return t.ResNetForImageClassification(t.ResNetConfig(num_labels=1000))  # the defaults: ResNet-50's layout


def _padding_mask(rows: int, length: int, padded: int) -> torch.Tensor:
    mask = torch.ones(rows, length, dtype=torch.long)
    mask[1::2, -padded:] = 0
    return mask


def _ids(g, vocab, *shape):
    return torch.randint(0, vocab, shape, generator=g)


def _cuda_inference(g) -> dict:
    return {
        "gpt2_small_fp32": (Logits(_gpt2(), "input_ids"), (_ids(g, 50257, 8, 512),), torch.float32),
        "bert_base_fp32": (Logits(_bert(), "input_ids", "attention_mask"),
                           (_ids(g, 30522, 16, 128), _padding_mask(16, 128, 32)), torch.float32),
        "llama_1b_bf16": (Logits(_llama_1b(), "input_ids"), (_ids(g, 32000, 4, 512),), torch.bfloat16),
        "vit_b16_fp32": (Logits(_vit_b16(), "pixel_values"), (torch.randn(32, 3, 224, 224, generator=g),),
                         torch.float32),
        "resnet50_fp32": (Logits(_resnet50(), "pixel_values"), (torch.randn(32, 3, 224, 224, generator=g),),
                          torch.float32),
    }


GEMM = 4096


def _gemms(g) -> dict:
    """torch.mm at 4096^3 in each float type: our compiled matmul against torch's own call."""
    r = lambda dtype: torch.randn(GEMM, GEMM, generator=g).to(dtype)  # noqa: E731
    return {f"gemm_{GEMM}_{str(dtype).split('.')[1]}": (torch.mm, (r(dtype), r(dtype)))
            for dtype in (torch.bfloat16, torch.float16, torch.float32)}


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)


def _adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def _token_loss(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


def _class_loss(logits, labels):
    return F.cross_entropy(logits.float(), labels)


def _cuda_training(g) -> dict:
    ids = _ids(g, 50257, 8, 512)
    return {
        "train_resnet50_amp": ScaleTraining(Autocast(Logits(_resnet50(), "pixel_values"), torch.bfloat16), _sgd,
                                            torch.randn(32, 3, 224, 224, generator=g),
                                            torch.randint(0, 1000, (32,), generator=g), _class_loss),
        "train_gpt2_amp": ScaleTraining(Autocast(Logits(_gpt2(), "input_ids"), torch.bfloat16), _adamw, ids,
                                        ids.roll(-1, dims=1), _token_loss),
    }


def scale_workloads(device: str) -> dict:
    """name -> ScaleInference / ScaleTraining on `device`, each built from seed 0."""
    if device != "cuda":
        raise SystemExit("bench_models --scale: the cuda workloads only so far (issue: CPU at real sizes)")
    out = {}
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    for name, (model, inputs, dtype) in _cuda_inference(g).items():
        model = model.to(device=device, dtype=dtype).eval()
        out[name] = ScaleInference(model, tuple(x.to(device) for x in inputs), "scale")
    for name, w in _cuda_training(g).items():
        w.model, w.inputs, w.target = w.model.to(device), w.inputs.to(device), w.target.to(device)
        w.group = "scale"
        out[name] = w
    for name, (fn, inputs) in _gemms(g).items():
        out[name] = ScaleInference(fn, tuple(x.to(device) for x in inputs), "gemm", flops=2.0 * GEMM**3)
    return out


# ----------------------------------------------------------------------------- accuracy


def rmse(got: torch.Tensor, want: torch.Tensor) -> float:
    return math.sqrt(torch.mean((got.double() - want.double()) ** 2).item())


def _float64(xs):
    return tuple(x.double() if x.is_floating_point() else x for x in xs)


def accuracy(errors: dict) -> str:
    """'yes (error 1.20x eager's)' or 'NO (...)' from {'what': (eager rmse, mlir rmse)}; with several
    checks, each one's ratio."""
    ratios, failed = {}, []
    for what, (eager, mlir) in errors.items():
        ratios[what] = mlir / eager if eager > 0 else (0.0 if mlir == 0 else math.inf)
        if ratios[what] > ACCURACY_RATIO:
            failed.append(f"{what}: rmse vs float64 {mlir:.2e}, eager's {eager:.2e}")
    each = "; ".join(f"{what} {r:.2f}x" for what, r in ratios.items()) if len(ratios) > 1 else ""
    if failed:
        return f"NO ({'; '.join(failed)}{' | ' + each if each else ''})"
    return f"yes (error {max(ratios.values()):.2f}x eager's{': ' + each if each else ''})"


def inference_errors(w: ScaleInference, eager_out, mlir_out) -> dict:
    fn = copy.deepcopy(w.fn).double() if isinstance(w.fn, nn.Module) else w.fn
    with torch.no_grad():
        ref = fn(*_float64(w.inputs))
    return {"output": (rmse(eager_out, ref), rmse(mlir_out, ref))}


def gradients(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.double().flatten() for p in model.parameters() if p.grad is not None])


def reference_step(w: ScaleTraining) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and gradients of one step of a float64 copy of the model."""
    model = copy.deepcopy(w.model).double().train()
    loss = w.loss(model(*_float64((w.inputs,))), w.target)
    loss.backward()
    return loss.detach().double(), gradients(model)
