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
  and the GEMM table: torch.mm at 4096^3 in bf16, fp16 and fp32
  gpt2_small_sweep     GPT-2 small, float32, batch 8 at 128, 192, 256 and 320 tokens with
                       PyTorch's automatic dynamic shapes (one timed call: the sweep; issue 25)
  bert_base_sweep      BERT-base, float32, batch 8 at 64, 128, 192 and 256 tokens, the same way

On cpu (issue 27's table; everything float32, the transformers models cut to their first 4 layers):
  gpt2_small_4l          GPT-2 small, 4 layers of 768, 1 x 128 tokens
  bert_base_4l           BERT-base, 4 layers, 2 x 128 tokens, the second row's last 32 padding
  vit_b16_4l             ViT-B/16, 4 layers, batch 2 of 224 x 224
  train_gpt2_small_4l    a GPT-2 small training step (AdamW), 4 layers of 768, 1 x 128 tokens
  train_resnet50_b2_sgd  a ResNet-50 training step (SGD), batch 2 (train_workloads.py's)
  gpt2_small_4l_sweep    GPT-2 small, 4 layers, called at 32, 48, 64 and 80 tokens with PyTorch's
                         automatic dynamic shapes: one timed call is the sweep over the 4 lengths,
                         each backend compiling the model once (its first length static, the
                         second a recompile with symbolic sizes); the row counts mlir's graphs
  mlp_b64                the models table's MLP (10-64-32-1), batch 64
  train_mlp_adam_loop    the MLP's Adam training step at batch 256 (train_workloads.py's
                         train_mlp_b256_adam), 100 calls of the compiled step timed as one
  llama_2l_128           the models table's LLaMA (2 layers of 128), 2 x 64 tokens

Accuracy, as PyTorch's benchmark suite judges it, with its own function
(torch._dynamo.utils.same, at its default tolerance TOLERANCE): a float64 copy of the model
(float64 inputs, no autocast) is the reference; mlir's result passes where it is allclose to
eager's at that tolerance, or where its root-mean-square error against the reference is at most
a multiple of eager's (3x for half results, 2x for float32 ones, 3x for tensors of under 1000
elements) plus TOLERANCE / 10. For a training step: the loss and the gradients of one step from
the same weights, each judged so; for the loop too (its first step, as PyTorch's suite judges
one iteration: over 100 steps torch.compile's traced Adam leaves eager's trajectory with any
backend, Dynamo's graph run unchanged included: the MLP's gradients at step 100 differ from
eager's by up to 1e-2, eager's from a float64 copy's by 5e-8). For the sweep: each length's
logits. The table prints each RMSE ratio, and says where a result
passed by allclose (a scalar loss whose error is a few ulps can be 20x eager's lucky one).
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from dynamo_mlir.tools.models import mlp
from train_workloads import Training, make_step, training
from workloads import Inference, Logits, small_transformer, tokens

TOLERANCE = 1e-4


@dataclass
class ScaleInference(Inference):
    """An inference workload judged against a float64 copy of `fn` (a module) run on float64
    copies of the inputs; flops: per call, for a TFLOP/s column (the GEMM table); calls: calls
    per timed sample (a call of tens of microseconds is below what one timed call can resolve:
    the timer, and caches the other backends' calls left cold, weigh as much as the call)."""

    flops: float = 0.0
    calls: int = 1


@dataclass
class ScaleTraining(Training):
    """A training step judged against a float64 copy (loss and gradients of one step); with
    steps > 1 a loop: that many calls of the compiled step make one timed call."""

    steps: int = 1


@dataclass
class ScaleSweep:
    """`fn` called on each of `inputs` (sequences of different lengths) in turn: one timed call
    is the whole sweep (`sweep`), each backend's `fn` compiled once with PyTorch's automatic
    dynamic shapes."""

    fn: nn.Module
    inputs: tuple
    group: str = "scale"


def called(w, backend: str, options: dict | None = None):
    """(the function a loop calls, its arguments, whether it runs with grad) for an inference or
    training workload `w` under `backend` (eager: not compiled; mlir: with `options`)."""
    if isinstance(w, ScaleInference):
        fn, args, grad = copy.deepcopy(w.fn), w.inputs, False
    elif isinstance(w, ScaleTraining):
        fn, args, grad = make_step(w), (w.inputs, w.target), True
    else:
        raise SystemExit(f"{type(w).__name__} workloads are not called alone")
    if backend != "eager":
        fn = torch.compile(fn, backend=backend, **({"options": options} if options else {}))
    return fn, args, grad


def sweep(fn):
    """The callable timed for a ScaleSweep: `fn` on each input, the outputs in a list."""
    def over_lengths(*inputs):
        return [fn(x) for x in inputs]
    return over_lengths


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


def gpt2(layers: int = 12, width: int = 768):
    """GPT-2 (small at the defaults), dropout off; 64-wide heads."""
    t = _transformers()
    return t.GPT2LMHeadModel(t.GPT2Config(n_layer=layers, n_embd=width, n_head=max(width // 64, 1), use_cache=False,
                                          resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))


def bert(layers: int = 12, width: int = 768):
    """BERT (base at the defaults) for masked LM, dropout off; 64-wide heads, MLP 4x wide."""
    t = _transformers()
    return t.BertForMaskedLM(t.BertConfig(num_hidden_layers=layers, hidden_size=width,
                                          num_attention_heads=max(width // 64, 1), intermediate_size=4 * width,
                                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def llama(layers: int = 2, width: int = 256):
    """A LLaMA with grouped-query attention (4 query heads per key/value head, 64 wide), MLP 2.75x wide."""
    t = _transformers()
    heads = max(width // 64, 4)
    return t.LlamaForCausalLM(t.LlamaConfig(hidden_size=width, intermediate_size=width * 11 // 4, num_hidden_layers=layers,
                                            num_attention_heads=heads, num_key_value_heads=heads // 4,
                                            vocab_size=32000, use_cache=False))


def _llama_1b():
    t = _transformers()
    cfg = t.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=32,
                        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=2048, use_cache=False,
                        tie_word_embeddings=False)
    return t.LlamaForCausalLM(cfg)


def _vit_b16(layers: int = 12):
    t = _transformers()
    return t.ViTForImageClassification(t.ViTConfig(num_hidden_layers=layers, hidden_dropout_prob=0.0,
                                                   attention_probs_dropout_prob=0.0, num_labels=1000))


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
        "gpt2_small_fp32": (Logits(gpt2(), "input_ids"), (_ids(g, 50257, 8, 512),), torch.float32),
        "bert_base_fp32": (Logits(bert(), "input_ids", "attention_mask"),
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
        "train_gpt2_amp": ScaleTraining(Autocast(Logits(gpt2(), "input_ids"), torch.bfloat16), _adamw, ids,
                                        ids.roll(-1, dims=1), _token_loss),
    }


SWEEP_LENGTHS = (32, 48, 64, 80)


def length_sweep(model: str = "gpt2", layers: int = 4, width: int = 768, lengths=SWEEP_LENGTHS, batch: int = 1,
                 device: str = "cpu") -> ScaleSweep:
    """`model` (gpt2, bert or llama) in eval mode, called on `batch` rows of random tokens at each of
    `lengths` (benchmarks/dynamic_sweep.py and the cpu table's sweep row); from seed 0."""
    torch.manual_seed(0)
    net = {"gpt2": gpt2, "bert": bert, "llama": llama}[model](layers, width)
    g = torch.Generator().manual_seed(0)
    inputs = tuple(_ids(g, net.config.vocab_size, batch, int(n)).to(device) for n in lengths)
    return ScaleSweep(Logits(net, "input_ids").to(device).eval(), inputs)


def _cpu(g) -> dict:
    """Issue 27's table at CPU sizes, in its order, float32 (see the module's docstring)."""
    ids = _ids(g, 50257, 1, 128)
    inference = lambda fn, *xs: ScaleInference(fn.eval(), xs, "scale")  # noqa: E731
    return {
        "gpt2_small_4l": inference(Logits(gpt2(layers=4), "input_ids"), ids),
        "bert_base_4l": inference(Logits(bert(layers=4), "input_ids", "attention_mask"),
                                  _ids(g, 30522, 2, 128), _padding_mask(2, 128, 32)),
        "vit_b16_4l": inference(Logits(_vit_b16(layers=4), "pixel_values"), torch.randn(2, 3, 224, 224, generator=g)),
        "train_gpt2_small_4l": ScaleTraining(Logits(gpt2(layers=4), "input_ids"), _adamw, ids, ids.roll(-1, dims=1),
                                             _token_loss, "scale"),
        "train_resnet50_b2_sgd": ScaleTraining(**vars(training("train_resnet50_b2_sgd", "cpu")) | {"group": "scale"}),
        "gpt2_small_4l_sweep": length_sweep("gpt2", layers=4, width=768),
        "mlp_b64": ScaleInference(mlp().eval(), (torch.randn(64, 10, generator=g),), "scale", calls=50),
        "train_mlp_adam_loop": ScaleTraining(**vars(training("train_mlp_b256_adam", "cpu")) | {"group": "scale"},
                                             steps=100),
        "llama_2l_128": inference(Logits(small_transformer("llama"), "input_ids"), tokens(g)),
    }


def scale_workloads(device: str) -> dict:
    """name -> ScaleInference / ScaleTraining / ScaleSweep on `device`, each built from seed 0."""
    if device == "cpu":
        torch.manual_seed(0)
        return _cpu(torch.Generator().manual_seed(0))
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
    # Issue 25's sweeps: the full models, batch 8, automatic dynamic shapes.
    out["gpt2_small_sweep"] = length_sweep("gpt2", 12, 768, (128, 192, 256, 320), batch=8, device=device)
    out["bert_base_sweep"] = length_sweep("bert", 12, 768, (64, 128, 192, 256), batch=8, device=device)
    return out


# ----------------------------------------------------------------------------- accuracy


def rmse(got: torch.Tensor, want: torch.Tensor) -> float:
    return math.sqrt(torch.mean((got.double() - want.double()) ** 2).item())


def _float64(xs):
    return tuple(x.double() if x.is_floating_point() else x for x in xs)


def _quiet(*_):
    pass


def accuracy(results: dict) -> str:
    """'yes (...)' or 'NO (...)' from {'what': (eager's, mlir's, the float64 reference)}: each
    judged by torch's same(), with its RMSE against the reference as a multiple of eager's."""
    from torch._dynamo.utils import same

    verdicts, failed = [], False
    for what, (eager, mlir, ref) in results.items():
        ok = same(eager, mlir, fp64_ref=ref, tol=TOLERANCE, log_error=_quiet)
        base, mine = rmse(eager, ref), rmse(mlir, ref)
        ratio = mine / base if base > 0 else (0.0 if mine == 0 else math.inf)
        # only to name a pass by allclose; a dtype or shape mismatch is same()'s failure, not a crash
        close = eager.dtype == mlir.dtype and eager.shape == mlir.shape \
            and torch.allclose(eager, mlir, atol=TOLERANCE, rtol=TOLERANCE)
        how = " (allclose to eager's)" if ok and close and ratio > 3 else ""
        verdicts.append(f"{what} {ratio:.2f}x{how}" + ("" if ok else f": rmse {mine:.2e}, eager's {base:.2e}"))
        failed |= not ok
    return f"{'NO' if failed else 'yes'} (error vs eager's: {'; '.join(verdicts)})"


def inference_errors(w: ScaleInference, eager_out, mlir_out) -> dict:
    fn = copy.deepcopy(w.fn).double() if isinstance(w.fn, nn.Module) else w.fn
    with torch.no_grad():
        ref = fn(*_float64(w.inputs))
    return {"output": (eager_out, mlir_out, ref)}


def gradients(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


def sweep_errors(w: ScaleSweep, eager_outs, mlir_outs) -> dict:
    model = copy.deepcopy(w.fn).double()
    with torch.no_grad():
        refs = sweep(model)(*w.inputs)
    return {f"length {x.shape[-1]}": (eager, mine, ref)
            for x, eager, mine, ref in zip(w.inputs, eager_outs, mlir_outs, refs)}


def reference_step(w: ScaleTraining) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and gradients of one step of a float64 copy of the model."""
    model = copy.deepcopy(w.model).double().train()
    loss = w.loss(model(*_float64((w.inputs,))), w.target)
    loss.backward()
    return loss.detach().double(), gradients(model)
