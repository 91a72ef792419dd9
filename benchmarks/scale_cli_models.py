"""The CUDA scale workloads as `dynamo-mlir` CLI factories (MODEL = benchmarks/scale_cli_models.py:NAME),
two layers deep (a layer's schedule repeats), on the GPU when there is one, in the workload's
dtype: what `dynamo-mlir dump ... --target cuda` and `explain` read to show a workload's host
schedule and kernels without the benchmark.

    dynamo-mlir dump benchmarks/scale_cli_models.py:llama_1b_bf16 --target cuda --out dump/
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _on_device(model, dtype, *inputs):
    model = model.to(device=DEVICE, dtype=dtype).eval()
    return model, tuple(x.to(DEVICE) for x in inputs)


def llama_1b_bf16():
    t = scale._transformers()
    cfg = t.LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=2, num_attention_heads=32,
                        num_key_value_heads=8, vocab_size=32000, max_position_embeddings=2048, use_cache=False,
                        tie_word_embeddings=False)
    g = torch.Generator().manual_seed(0)
    return _on_device(scale.Logits(t.LlamaForCausalLM(cfg), "input_ids"), torch.bfloat16, scale._ids(g, 32000, 4, 512))


def gpt2_small_fp32():
    g = torch.Generator().manual_seed(0)
    return _on_device(scale.Logits(scale.gpt2(layers=2), "input_ids"), torch.float32, scale._ids(g, 50257, 8, 512))


def bert_base_fp32():
    g = torch.Generator().manual_seed(0)
    return _on_device(scale.Logits(scale.bert(layers=2), "input_ids", "attention_mask"), torch.float32,
                      scale._ids(g, 30522, 16, 128), scale._padding_mask(16, 128, 32))
